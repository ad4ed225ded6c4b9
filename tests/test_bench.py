"""Sweeps: spec expansion, end-to-end run on real parts, resume without recompute, plots.

Real parts throughout: RANTEXT on cl100k-11k, the wiki dataset, the real
metrics and the KNN attack. The only instrument is a counting metric that the
test registers to prove how many cells were executed.
"""

from __future__ import annotations

import pickle
import struct

import pandas as pd
import pytest

from dptext.bench import parse_sweep, register_measure, run_cell, run_sweep
from dptext.bench.engine import part_path
from dptext.bench.measures import MEASURES
from dptext.bench.plots import plot_results
from dptext.bench.report import BEGIN, END, tables_markdown, update_document
from dptext.bench.spec import cell_id
from dptext.errors import DPTextError

CALLS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def counting_metric():
    @register_measure("bench_test_calls")
    def calls(cell, epsilon):
        CALLS.append((cell["cell_id"], epsilon))
        return len(CALLS)

    yield
    MEASURES.pop(("metric", "bench_test_calls"), None)


def sweep_doc(**extra) -> dict:
    doc = {
        "name": "two-cells",
        "datasets": [{"name": "wiki", "limit": 3}],
        "mechanisms": [{"name": "rantext", "epsilon": [2, 12]}],
        "metrics": ["bench_test_calls", "synonym_proportion", "embedding_distance", "rouge_l",
                    {"name": "cr_ratio", "params": {"n_units": 10, "n_per_unit": 10}}],
        "attacks": [{"name": "knn", "params": {"k": 10}}],
        "seeds": [0],
    }
    doc.update(extra)
    return doc


# ----- spec -----------------------------------------------------------------------------------------
def test_spec_expands_product_and_hashes_stably():
    doc = {"name": "x", "datasets": ["wiki", {"name": "news", "limit": 5}], "seeds": [0, 1],
           "experiments": [{"name": "e", "mechanisms": [
               {"name": "rantext", "epsilon": [1, 2, 3]},
               {"name": "stencil", "grid": {"sigma": [0.8, 1.0]}, "label": "sten(σ={sigma})"}]}]}
    cells = parse_sweep(doc).cells
    assert len(cells) == (3 + 2) * 2 * 2
    assert cells == parse_sweep(doc).cells  # deterministic
    assert len({c["cell_id"] for c in cells}) == len(cells)
    sten = [c for c in cells if c["mechanism"] == "stencil"]
    assert {c["epsilon"] for c in sten} == {None}
    assert {c["label"] for c in sten} == {"sten(σ=0.8)", "sten(σ=1.0)"}
    c = dict(cells[0])
    assert cell_id(c) == c["cell_id"]
    assert cell_id({**c, "sweep": "renamed"}) == c["cell_id"]  # the sweep's name is not identity
    assert cell_id({**c, "seed": 99}) != c["cell_id"]
    assert cell_id({**c, "epsilon": 1.5}) != c["cell_id"]


@pytest.mark.parametrize("bad, msg", [
    ({"datasets": ["wiki"], "mechanisms": [{"name": "rantext", "epsilon": [-1]}]}, "epsilon"),
    ({"datasets": ["wiki"], "mechanisms": [{"name": "rantext", "epsilon": "x"}]}, "not a number"),
    ({"datasets": [], "mechanisms": ["rantext"]}, "'datasets' is empty"),
    ({"datasets": ["wiki"], "mechanisms": ["rantext"], "bogus": 1}, "unknown key"),
    ({"datasets": ["wiki"], "mechanisms": [{"params": {}}]}, "'name'"),
])
def test_spec_rejects_bad_input(bad, msg):
    with pytest.raises(DPTextError, match=msg):
        parse_sweep(bad)


def test_run_cell_is_picklable_top_level():
    assert pickle.loads(pickle.dumps(run_cell)) is run_cell
    cell = parse_sweep(sweep_doc()).cells[0]
    assert pickle.loads(pickle.dumps(cell)) == cell


# ----- end to end ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    sweep = parse_sweep(sweep_doc())
    CALLS.clear()
    first = run_sweep(sweep, out, progress=False)
    mtimes = {c["cell_id"]: part_path(out, c["cell_id"]).stat().st_mtime_ns for c in sweep.cells}
    calls_after_first = list(CALLS)
    second = run_sweep(sweep, out, progress=False)
    return {"out": out, "sweep": sweep, "first": first, "second": second, "mtimes": mtimes,
            "calls_first": calls_after_first, "calls_second": list(CALLS)}


def test_two_cell_sweep_runs_end_to_end(ran):
    first = ran["first"]
    assert first["cells"] == 2 and first["computed"] == 2 and first["ok"] == 2, first
    df = pd.read_parquet(ran["out"] / "results.parquet")
    assert len(df) == 2 and set(df["status"]) == {"ok"}
    assert sorted(df["epsilon"]) == [2.0, 12.0]
    for col in ("metric.synonym_proportion", "metric.embedding_distance", "metric.rouge_l",
                "metric.cr_ratio.mean", "attack.knn.asr_at_1", "attack.knn.asr_at_k", "time.total"):
        assert df[col].notna().all(), col
    lo, hi = df.sort_values("epsilon").to_dict("records")
    # more privacy budget -> outputs closer to the inputs: the attack and Rouge-L go up, distance down
    assert hi["attack.knn.asr_at_1"] > lo["attack.knn.asr_at_1"]
    assert hi["metric.rouge_l"] > lo["metric.rouge_l"]
    assert hi["metric.embedding_distance"] < lo["metric.embedding_distance"]
    assert 0.0 < lo["metric.cr_ratio.mean"] <= 1.0
    assert len(lo["metric.cr_ratio.values"]) == 100
    assert first["slowest_cell_seconds"] > 0 and (ran["out"] / "sweep.json").is_file()


def test_resume_recomputes_nothing(ran):
    second = ran["second"]
    assert second["computed"] == 0 and second["reused"] == 2
    assert len(ran["calls_first"]) == 2
    assert ran["calls_second"] == ran["calls_first"]  # no cell executed again
    for cid, mtime in ran["mtimes"].items():
        assert part_path(ran["out"], cid).stat().st_mtime_ns == mtime
    assert len(pd.read_parquet(ran["out"] / "results.parquet")) == 2


def test_growing_a_sweep_runs_only_new_cells(ran, tmp_path):
    bigger = parse_sweep(sweep_doc(mechanisms=[{"name": "rantext", "epsilon": [2, 12, 6]}]))
    before = len(CALLS)
    s = run_sweep(bigger, ran["out"], progress=False)
    assert s["computed"] == 1 and s["reused"] == 2 and s["ok"] == 1
    assert len(CALLS) == before + 1 and CALLS[-1][1] == 6.0  # only the new cell ran
    again = run_sweep(bigger, ran["out"], progress=False)
    assert again["computed"] == 0 and again["reused"] == 3


def test_failing_metric_is_recorded_not_fatal(tmp_path):
    @register_measure("bench_test_fails")
    def fails(epsilon):
        raise ValueError("deliberate failure")

    try:
        s = run_sweep(parse_sweep(sweep_doc(mechanisms=[{"name": "rantext", "epsilon": 2}],
                                            metrics=["bench_test_fails", "rouge_l"], attacks=[])),
                      tmp_path, progress=False)
    finally:
        MEASURES.pop(("metric", "bench_test_fails"), None)
    assert s["partial"] == 1
    row = pd.read_parquet(tmp_path / "results.parquet").iloc[0]
    assert "deliberate failure" in row["errors"] and row["metric.rouge_l"] > 0


@pytest.mark.parametrize("change,msg", [
    ({"metrics": ["retenton"]}, "unknown metric 'retenton'"),
    ({"attacks": [{"name": "knnn"}]}, "unknown attack 'knnn'"),
    ({"mechanisms": [{"name": "rantext", "epsilon": 2}, {"name": "rantxt", "epsilon": 2}]},
     "unknown mechanism 'rantxt'"),
    ({"attacks": [{"name": "knn", "params": {"kk": 3}}]}, "attack 'knn': unknown parameter(s) kk"),
    ({"mechanisms": [{"name": "rantext", "epsilon": 2, "params": {"n_bukets": 3}}]}, "n_bukets"),
    ({"datasets": [{"name": "wikki"}]}, "unknown dataset 'wikki'"),
])
def test_sweep_is_validated_before_any_cell_runs(tmp_path, change, msg):
    before = len(CALLS)
    with pytest.raises(DPTextError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        run_sweep(parse_sweep(sweep_doc(**change)), tmp_path, progress=False)
    assert len(CALLS) == before and not (tmp_path / "parts").exists()


def test_measure_names_are_spelled_by_the_one_rule():
    """Sweep names go through ``normalise_name`` (spaces, case, ``-``/``_``) like mechanism names."""
    from dptext.attacks import ATTACKS
    from dptext.bench.measures import resolve

    assert resolve("metric", " CR-Ratio ") is resolve("metric", "cr_ratio") is MEASURES[("metric", "cr_ratio")]
    assert resolve("attack", "Bayes_Bound") is ATTACKS["bayes-bound"]


def test_cr_ratio_is_refused_for_a_mechanism_without_a_random_adjacency_list():
    from dptext.mechanisms import get_mechanism
    from dptext.metrics import candidate_set_ratios

    with pytest.raises(DPTextError, match="has no random adjacency list"):
        candidate_set_ratios(get_mechanism("santext", epsilon=2, corpus=["a b c"]), ["a"])


def _cli(*args):
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "dptext.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "DPTEXT_LOG_INTERVAL": "0.5"})
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_refuses_a_sweep_with_a_typo_in_one_line(tmp_path):
    import yaml

    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(sweep_doc(metrics=["retention", "rouge_l", "retenton"])))
    rc, out, err = _cli("bench", "run", spec, "--out", tmp_path / "out")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "unknown metric 'retenton'" in err, (rc, err)
    assert "Traceback" not in err and not (tmp_path / "out" / "parts").exists()


def test_cli_fully_reused_run_says_so(tmp_path):
    import yaml

    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"name": "tiny", "datasets": [{"name": "wiki", "limit": 2}],
                                    "mechanisms": [{"name": "rantext", "epsilon": 2}], "metrics": ["retention"]}))
    rc, out, err = _cli("bench", "run", spec, "--out", tmp_path / "out")
    assert rc == 0 and "1 computed" in out and "slowest cell" in out and "(tiny/" not in err, (out, err)
    assert "dptext: sweep tiny" in err  # stderr is a pipe: log lines, not a bar
    rc, out, err = _cli("bench", "run", spec, "--out", tmp_path / "out")
    assert rc == 0 and "1 reused, 0 computed" in out and "every cell reused, nothing computed" in out, out
    assert "None" not in out and "slowest cell" not in out


# ----- plots and report --------------------------------------------------------------------------------
def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plots_are_valid_pngs(ran, tmp_path):
    import matplotlib.image as mpimg

    paths = plot_results(ran["out"] / "results.parquet", tmp_path / "fig")
    names = {p.name for p in paths}
    assert any(n.startswith("pu-") for n in names)  # privacy-utility
    assert any(n.startswith("asr-") for n in names)  # ASR against epsilon
    assert any(n.startswith("hist-") and "cr_ratio" in n for n in names)  # |C_r|/|V| histogram
    for p in paths:
        w, h = _png_size(p)
        assert w > 100 and h > 100
        assert mpimg.imread(p).shape[:2] == (h, w)


def test_tables_go_between_markers(ran, tmp_path):
    doc = tmp_path / "R.md"
    doc.write_text(f"# R\n\nintro\n\n{BEGIN}\nold\n{END}\n\noutro\n")
    update_document(doc, tables_markdown(ran["out"] / "results.parquet"))
    text = doc.read_text()
    assert "intro" in text and "outro" in text and "old" not in text
    assert "| rantext |" in text and "ε=12" in text


def test_cli_run_and_plot(ran, tmp_path):
    import yaml

    from dptext.cli import main

    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(sweep_doc()))
    assert main(["bench", "run", str(spec), "--out", str(ran["out"]), "--no-progress"]) == 0
    assert main(["bench", "plot", str(ran["out"]), "--out", str(tmp_path / "f")]) == 0
    assert list((tmp_path / "f").glob("*.png"))
    assert main(["bench", "run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["bench", "run", str(spec), "--engine", "nope"]) == 2


def test_only_selects_experiments_mechanisms_and_variants():
    from dptext.bench.engine import select_cells

    sweep = parse_sweep({"name": "s", "datasets": [{"name": "wiki", "limit": 2}], "experiments": [
        {"name": "a", "mechanisms": [{"name": "rantext", "epsilon": [2, 6]},
                                     {"name": "rantext", "label": "paper-z", "epsilon": 2}]},
        {"name": "b", "mechanisms": [{"name": "custext+", "epsilon": 2}]}]})
    pick = lambda only: sorted((c["experiment"], c["label"] or c["mechanism"], c["epsilon"])  # noqa: E731
                               for c in select_cells(sweep.cells, only))
    assert pick(["b"]) == [("b", "custext+", 2.0)]
    assert pick(["a/rantext"]) == [("a", "paper-z", 2.0), ("a", "rantext", 2.0), ("a", "rantext", 6.0)]
    assert pick(["a/paper-z", "b/custext+"]) == [("a", "paper-z", 2.0), ("b", "custext+", 2.0)]
    assert len(select_cells(sweep.cells, None)) == 4
    with pytest.raises(DPTextError, match="selects no cell"):
        select_cells(sweep.cells, ["c"])
