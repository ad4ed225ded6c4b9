"""Batch sanitization: engines local and ray, JSONL and Parquet, rejects, random streams."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dptext.batch import sanitize_corpus
from dptext.batch.engines import LocalEngine
from dptext.batch.ray_engine import RayEngine
from dptext.batch.sanitize import BatchJob
from dptext.mechanisms.spec import MechanismSpec
from dptext.cli import main as cli_main

MECH = dict(mechanism="rantext", epsilon=3.0)
LONG = ("Alice Johnson from Springfield told her doctor about the persistent headaches, the new medication "
        "and the insurance claim that her employer rejected last winter")
WORDS = "patient doctor hospital fever morning visit clinic nurse report family".split()


def _good_rows(n: int) -> list[dict]:
    rows = []
    for i in range(n):
        w = [WORDS[(i * 7 + k) % len(WORDS)] for k in range(6)]
        rows.append({"id": f"doc-{i}", "text": f"The {w[0]} saw the {w[1]} at the {w[2]} with {i} notes.",
                     "meta": {"lang": "en", "tags": [i, i % 3]}, "score": i / 10})
    return rows


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """120 good rows with malformed lines mixed in (line numbers recorded)."""
    d = tmp_path_factory.mktemp("batch")
    rows = _good_rows(120)
    lines, bad = [], {}
    for i, r in enumerate(rows):
        lines.append(json.dumps(r))
        if i == 10:
            lines.append('{"id": "broken", "text": "unterminated')
            bad[len(lines)] = "invalid JSON"
        if i == 50:
            lines.append(json.dumps({"id": "no-text", "body": "x"}))
            bad[len(lines)] = "no field 'text'"
        if i == 90:
            lines.append(json.dumps({"id": "num", "text": 42}))
            bad[len(lines)] = "not a string"
    path = d / "in.jsonl"
    data = ("\n".join(lines) + "\n").encode() + b'{"id": "latin", "text": "caf\xe9"}\n'
    bad[len(lines) + 1] = "invalid UTF-8"
    path.write_bytes(data)
    return {"dir": d, "path": path, "rows": rows, "bad": bad}


@pytest.fixture(scope="module")
def ray_local():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _read_jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def _run(corpus, name, **kw):
    out = corpus["dir"] / f"{name}.jsonl"
    summary = sanitize_corpus(corpus["path"], out, **{**MECH, **kw})
    return summary, _read_jsonl(out)


@pytest.fixture(scope="module")
def local2(corpus):
    return _run(corpus, "local2", engine="local", workers=2, seed=11, shard_size=16)


def test_rows_fields_order_and_reports(corpus, local2):
    summary, out = local2
    rows = corpus["rows"]
    assert [r["id"] for r in out] == [r["id"] for r in rows]  # same ids, input order
    for r_in, r_out in zip(rows, out):
        assert {k: v for k, v in r_out.items() if k not in ("text", "privacy_report")} == \
               {k: v for k, v in r_in.items() if k != "text"}
        rep = r_out["privacy_report"]
        assert rep["mechanism"] == "rantext" and rep["epsilon"] == 3.0 and rep["space"] == "cl100k-11k"
        assert rep["claim"]["kind"] == "dp-within-set"
        assert rep["perturbed"] + rep["kept"] + rep["dropped"] > 0
    changed = sum(r_out["text"] != r_in["text"] for r_in, r_out in zip(rows, out))
    assert changed == len(rows)  # RANTEXT at ε=3 rewrites every sentence
    assert summary["documents"] == 120 and summary["rejected"] == 4 and summary["records"] == 124
    assert summary["units"] > 120 * 10 and summary["units_per_s"] > 0


def test_rejects_file_lists_every_malformed_line(corpus, local2):
    summary, _ = local2
    rejects = _read_jsonl(summary["rejects_file"])
    assert {r["line"]: r["error"] for r in rejects}.keys() == corpus["bad"].keys()
    for r in rejects:
        assert corpus["bad"][r["line"]] in r["error"]
        assert r["raw"]  # the record itself is kept (locally) for repair


def test_seeded_runs_reproducible_across_engines(corpus, local2, ray_local):
    _, out2 = local2
    _, out1 = _run(corpus, "local1", engine="local", workers=1, seed=11)
    summary_r, outr = _run(corpus, "ray", engine="ray", workers=2, seed=11, shard_size=16)
    assert summary_r["engine"] == "ray" and summary_r["rejected"] == 4
    assert out1 == out2 == outr
    _, other = _run(corpus, "seed12", engine="local", workers=1, seed=12)
    assert sum(a["text"] != b["text"] for a, b in zip(other, out1)) > 100


def test_block_stream_is_the_spawned_child(corpus, local2):
    """Stream block b (records 64·b .. 64·b+63) uses child b of SeedSequence(seed).spawn, its documents
    perturbed in record order in one call: recompute both blocks of the corpus in this process."""
    from dptext.batch.sanitize import STREAM_BLOCK

    _, out = local2
    assert STREAM_BLOCK == 64
    mech = MechanismSpec(mechanism="rantext", epsilon=3.0).build()
    children = np.random.SeedSequence(11).spawn(2)
    # records 11, 52, 93 are malformed: rows 0..61 are block 0's good records, rows 62..119 block 1's
    for block, rows in ((0, range(0, 62)), (1, range(62, 120))):
        texts = [corpus["rows"][r]["text"] for r in rows]
        res = mech.perturb_many(texts, rng=np.random.default_rng(children[block]))
        assert [out[r]["text"] for r in rows] == [x.text for x in res]


def test_repeated_document_gets_independent_perturbations(tmp_path):
    path = tmp_path / "rep.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": LONG}) + "\n" for i in range(48)))
    out = tmp_path / "rep_out.jsonl"
    summary = sanitize_corpus(path, out, **MECH, engine="local", workers=2, seed=5, shard_size=4)
    texts = [r["text"] for r in _read_jsonl(out)]
    assert summary["workers"] == 2 and len(texts) == 48
    assert len(set(texts)) == 48  # 12 shards over 2 workers: no two documents share noise


def test_ray_engine_windows_and_existing_cluster(corpus, ray_local, tmp_path):
    job = BatchJob(MechanismSpec(mechanism="rantext", epsilon=3.0))
    items = [(i, r["text"]) for i, r in enumerate(corpus["rows"][:70])]
    with LocalEngine(job, 99, workers=1, shard_size=8) as eng:
        want = [(r.index, r.text, r.units) for r in eng.run(items)]
    with RayEngine(job, 99, workers=2, shard_size=8) as eng:  # 9 shards over 2 actors, 4 in flight
        assert not eng.owns_ray  # the running Ray is reused, not shut down
        got = [(r.index, r.text, r.units) for r in eng.run(items)]
    assert got == want
    # a separate driver process joins this cluster by address
    addr = ray_local.get_runtime_context().gcs_address
    out = tmp_path / "addr.jsonl"
    proc = subprocess.run([sys.executable, "-m", "dptext.cli", "sanitize-corpus", str(corpus["path"]), str(out),
                           "-m", "rantext", "-e", "3", "--engine", "ray", "--ray-address", addr, "--seed", "11",
                           "--shard-size", "16", "-q"], capture_output=True, text=True, timeout=180,
                          env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["documents"] == 120
    assert _read_jsonl(out) == _read_jsonl(corpus["dir"] / "local2.jsonl")


def test_parquet_roundtrip(tmp_path):
    rows = _good_rows(40)
    table = pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows] [:39] + [None],
                      "tags": [r["meta"]["tags"] for r in rows], "score": [r["score"] for r in rows]})
    src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src)
    summary = sanitize_corpus(src, dst, **MECH, engine="local", workers=1, seed=3,
                              rejects=str(tmp_path / "rej.jsonl"))
    out = pq.read_table(dst)
    assert out.schema.names == ["id", "text", "tags", "score", "privacy_report"]
    assert out.schema.field("tags").type == table.schema.field("tags").type
    assert out.column("id").to_pylist() == table.column("id").to_pylist()[:39]
    assert out.column("tags").to_pylist() == table.column("tags").to_pylist()[:39]
    assert json.loads(out.column("privacy_report")[0].as_py())["mechanism"] == "rantext"
    assert summary["rejected"] == 1
    (rej,) = _read_jsonl(tmp_path / "rej.jsonl")
    assert rej["line"] == 40 and "null" in rej["error"]


def test_cli_summary_and_one_line_errors(corpus, tmp_path, capsys):
    out = tmp_path / "cli.jsonl"
    rc = cli_main(["sanitize-corpus", str(corpus["path"]), str(out), "-m", "rantext", "-e", "2", "--seed", "1",
                   "--workers", "1", "-q", "--rejects", str(tmp_path / "r.jsonl")])
    cap = capsys.readouterr()
    assert rc == 0
    summary = json.loads(cap.out)
    assert summary["documents"] == 120 and summary["rejected"] == 4 and summary["units_per_s"] > 0
    for line in corpus["bad"]:
        assert f"line {line}: rejected" in cap.err
    for argv, msg in [
        (["-e", "0"], "epsilon"),
        (["-e", "1", "--engine", "spark"], "unknown engine"),
        (["-e", "1", "-m", "nope"], "unknown mechanism"),
    ]:
        rc = cli_main(["sanitize-corpus", str(corpus["path"]), str(tmp_path / "x.jsonl"), "-m", "rantext",
                       "-q", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1
    rc = cli_main(["sanitize-corpus", str(corpus["path"]), str(tmp_path / "x.parquet"), "-m", "rantext", "-e", "1"])
    assert rc == 2 and "same format" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.parquet").exists()


def test_bench_sweep_cells_as_ray_tasks(ray_local, tmp_path):
    import pandas as pd

    from dptext.bench import get_engine, parse_sweep, run_sweep

    assert get_engine("ray").__module__ == "dptext.bench.ray_engine"
    sweep = parse_sweep({"name": "ray-two", "datasets": [{"name": "wiki", "limit": 2}],
                         "mechanisms": [{"name": "rantext", "epsilon": [2, 12]}],
                         "metrics": ["rouge_l", "embedding_distance"], "seeds": [0]})
    ray_sum = run_sweep(sweep, tmp_path / "ray", engine="ray", progress=False)
    local_sum = run_sweep(sweep, tmp_path / "local", engine="local", progress=False)
    assert ray_sum["ok"] == local_sum["ok"] == 2, (ray_sum, local_sum)
    cols = ["cell_id", "epsilon", "n_units", "metric.rouge_l", "metric.embedding_distance"]
    got = pd.read_parquet(tmp_path / "ray" / "results.parquet")[cols].sort_values("cell_id")
    want = pd.read_parquet(tmp_path / "local" / "results.parquet")[cols].sort_values("cell_id")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    again = run_sweep(sweep, tmp_path / "ray", engine="ray", progress=False)
    assert again["computed"] == 0 and again["reused"] == 2  # resume works as with the local engine


def test_bom_crlf_and_blank_lines_are_not_records(tmp_path):
    src = tmp_path / "bom.jsonl"
    src.write_bytes(b'\xef\xbb\xbf{"id": 1, "text": "hello world"}\r\n\r\n{"id": 2, "text": "good day"}\r\n')
    summary = sanitize_corpus(src, tmp_path / "bom_out.jsonl", **MECH, workers=1, seed=0)
    assert (summary["documents"], summary["rejected"], summary["blank_lines"]) == (2, 0, 1)
    assert [r["id"] for r in _read_jsonl(tmp_path / "bom_out.jsonl")] == [1, 2]


def test_jsonl_lines_are_exactly_json_dumps_of_the_record_with_its_report(tmp_path):
    """The writer encodes the shared claim once; every line must still equal the plain encoding,
    also when the text holds the writer's internal marker or the record already has the field."""
    import json

    from dptext.batch.output import JsonlWriter
    from dptext.mechanisms import get_mechanism

    m = get_mechanism("rantext", epsilon=3.0, seed=0, oov="keep")
    mark = "\x00dptext-claim\x00"
    reports = [m.perturb(t).privacy for t in ("The doctor said so.", f"Zzyzx {mark} went", 'naïve 😀 "q" \\')]
    rows = [{"id": 1, "text": f"a {mark} b"}, {"text": "x", "privacy_report": 3, "meta": {"k": [1]}}, {},
            {"id": 2, "text": "plain"}]
    w = JsonlWriter(tmp_path / "out.jsonl", "privacy_report")
    want = []
    for row in rows:
        for rep in reports + [{"claim": {"a": mark}, "kept_units": [mark]}]:
            w.write(row, rep)
            want.append(json.dumps({**row, "privacy_report": rep}, ensure_ascii=False))
    w.commit()
    assert (tmp_path / "out.jsonl").read_text("utf-8").splitlines() == want


def test_ray_actor_that_cannot_build_its_mechanism_raises_the_error_itself(ray_local):
    """An actor's build error reaches the driver as the library error (one line in the CLI), not as
    Ray's "the actor died" report."""
    from dptext.errors import DPTextError

    class Unbuildable(BatchJob):  # defined here: Ray ships it to the actors by value
        def build(self):
            raise DPTextError("space x cannot be built on this node")

    with pytest.raises(DPTextError, match=r"^space x cannot be built on this node$"):
        with RayEngine(Unbuildable(MechanismSpec(mechanism="rantext", epsilon=3.0)), 1, workers=2) as eng:
            list(eng.run([(0, "one"), (1, "two")]))


def test_watchdog_teardown_takes_the_descendants_of_marked_processes():
    """A child whose environment no longer shows the marker (Ray's renamed agents wrote their title over it)
    is still torn down while its marked parent lives; an unmarked process beside them is left alone."""
    import time

    from procs import proc_stat

    from dptext.batch.ray_watchdog import MARKER_VAR, marked_processes, teardown

    marker = f"test-{os.getpid()}-{time.time_ns()}"
    clean = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
    parent = subprocess.Popen(  # marked; starts an unmarked grandchild-to-be and waits on it
        [sys.executable, "-c", "import os, subprocess, sys; env = dict(os.environ); del env[sys.argv[1]]; "
         "print(subprocess.Popen(['sleep', '60'], env=env).pid, flush=True); import time; time.sleep(60)",
         MARKER_VAR], env={**clean, MARKER_VAR: marker}, stdout=subprocess.PIPE, text=True)
    bystander = subprocess.Popen(["sleep", "60"], env=clean)
    child = int(parent.stdout.readline())
    try:
        with open(f"/proc/{child}/environ", "rb") as f:
            assert f"{MARKER_VAR}={marker}".encode() not in f.read().split(b"\0")
        assert marked_processes(marker) == sorted([parent.pid, child])
        assert teardown(marker, grace=2.0) == 0
        assert parent.wait(5) != 0
        assert marked_processes(marker) == []
        assert proc_stat(child) is None  # gone, or a zombie nobody reaps
        assert bystander.poll() is None
    finally:
        for p in (parent, bystander):
            p.kill()
        for pid in (child,):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
