"""`dptext sanitize-corpus` as a user runs it: rejects, --strict, progress, folders, killed runs, Ray teardown.

Every test runs the real CLI in a subprocess and checks its exit status and what it prints.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path


from procs import cmdline, proc_stat, read_pty, tagged_processes, with_descendants

GOOD = [{"id": i, "text": f"The nurse met the doctor at the hospital on day {i}.", "meta": {"n": i}}
        for i in range(6)]


def run(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "dptext.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def write_jsonl(path: Path, rows, extra_lines=()) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        for line in extra_lines:
            f.write(line + "\n")
    return path


def sanitize(src, out, *more, env=None):
    return run("sanitize-corpus", src, out, "-m", "rantext", "-e", "3", "--seed", "1", "-j", "1", *more, env=env)


def test_rejects_file_is_private_created_on_demand_and_strict_fails(tmp_path):
    clean = write_jsonl(tmp_path / "clean.jsonl", GOOD)
    p = sanitize(clean, tmp_path / "clean_out.jsonl", "--strict", "-q")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rejects_file"] is None
    assert not (tmp_path / "clean_out.jsonl.rejects.jsonl").exists()  # no reject, no file

    dirty = write_jsonl(tmp_path / "dirty.jsonl", GOOD, ['{"id": "broken", "text": "unterminated'])
    p = sanitize(dirty, tmp_path / "out.jsonl", "-q")
    assert p.returncode == 0, p.stderr
    rejects = tmp_path / "out.jsonl.rejects.jsonl"
    assert stat.S_IMODE(rejects.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600
    assert [json.loads(x)["line"] for x in rejects.read_text().splitlines()] == [7]

    p = sanitize(dirty, tmp_path / "strict.jsonl", "--strict", "-q")
    assert p.returncode == 1
    assert json.loads(p.stdout)["rejected"] == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("dptext: error: 1 records rejected (--strict)"), p.stderr
    assert "Traceback" not in p.stderr


def test_lone_surrogate_in_another_field_goes_to_rejects(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", GOOD[:2], ['{"id": "s", "text": "fine words", "note": "x\\ud800y"}',
                                                        '{"id": "t", "text": "bad \\udc00 text"}'])
    p = sanitize(src, tmp_path / "out.jsonl", "-q")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert (summary["documents"], summary["rejected"]) == (2, 2)
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in out] == [0, 1]
    rej = {json.loads(x)["line"]: json.loads(x) for x in (tmp_path / "out.jsonl.rejects.jsonl").read_text().splitlines()}
    assert set(rej) == {3, 4}
    assert "field 'note'" in rej[3]["error"] and "\\ud800" in rej[3]["raw"]
    assert "field 'text'" in rej[4]["error"]
    assert "line 3: rejected: field 'note' is not valid Unicode" in p.stderr


def test_missing_output_folder_is_an_error_not_a_mkdir(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    p = sanitize(src, tmp_path / "no" / "such" / "out.jsonl", "-q")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [f"dptext: error: output folder '{tmp_path / 'no' / 'such'}' does not "
                                             "exist (create it first)"]
    assert not (tmp_path / "no").exists()
    p = sanitize(src, tmp_path / "o.jsonl", "--rejects", tmp_path / "nope" / "r.jsonl", "-q")
    assert p.returncode == 2 and "rejects file folder" in p.stderr and not (tmp_path / "nope").exists()


def test_progress_lines_when_stderr_is_not_a_terminal(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": i, "text": f"The doctor visited ward {i}."} for i in range(3000)])
    env = {"DPTEXT_PROGRESS_INTERVAL": "0.2"}
    p = sanitize(src, tmp_path / "out.jsonl", "--shard-size", "16", env=env)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("dptext: sanitizing (local): ")]
    assert len(lines) >= 2, p.stderr
    assert lines[-1].startswith("dptext: sanitizing (local): 3000/3000 (100%)")
    assert "\x1b[" not in p.stderr  # plain lines, no cursor control
    q = sanitize(src, tmp_path / "out_q.jsonl", "-q", env=env)
    assert q.returncode == 0 and q.stderr == ""


def test_progress_bar_on_a_terminal(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": i, "text": f"The doctor visited ward {i}."} for i in range(3000)])
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize-corpus", str(src), str(tmp_path / "o.jsonl"),
                             "-m", "rantext", "-e", "3", "-j", "1", "--shard-size", "16"],
                            stdout=subprocess.PIPE, stderr=slave, env={**os.environ, "COLUMNS": "100"})
    os.close(slave)
    seen = b""
    try:
        seen = read_pty(master, 4096)
    finally:
        proc.wait(timeout=600)
        os.close(master)
    assert proc.returncode == 0
    assert b"sanitizing (local)" in seen and b"\x1b[" in seen  # a live bar, drawn with cursor control
    assert b"dptext: sanitizing (local):" not in seen  # not the plain log lines


def _wait_for(cond, timeout: float, proc=None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def test_after_kill_9_the_next_run_removes_the_partial_output_and_says_so(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl",
                      [{"id": i, "text": f"The nurse wrote note {i} for the doctor."} for i in range(60_000)])
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize-corpus", str(src), str(out), "-m",
                             "rantext", "-e", "3", "-j", "1", "--shard-size", "64", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def partial():
        return [p for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl.") and p.stat().st_size > 0]

    assert _wait_for(partial, 300, proc), "the run never started writing"
    proc.kill()
    proc.wait()
    (left,) = partial()
    assert not out.exists()
    small = write_jsonl(tmp_path / "small.jsonl", GOOD)
    p = sanitize(small, out, "-q")
    assert p.returncode == 0, p.stderr
    assert f"dptext: removed {left}, the partial output of an earlier run that was killed" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl", "small.jsonl"]


def test_ray_run_is_quiet_and_kill_9_of_the_driver_leaves_no_ray_process(tmp_path):
    small = write_jsonl(tmp_path / "small.jsonl", GOOD)
    p = run("sanitize-corpus", small, tmp_path / "small_out.jsonl", "-m", "rantext", "-e", "3", "--seed", "1",
            "--engine", "ray", "-j", "1", "-q")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # no core_worker.cc "E ..." line, no token-authentication warning
    assert json.loads(p.stdout)["documents"] == len(GOOD)

    src = write_jsonl(tmp_path / "in.jsonl",
                      [{"id": i, "text": f"The nurse wrote note {i} for the doctor."} for i in range(200_000)])
    tag = f"dptext-ray-{os.getpid()}-{time.time_ns()}"
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize-corpus", str(src),
                             str(tmp_path / "out.jsonl"), "-m", "rantext", "-e", "3", "--engine", "ray", "-j", "1",
                             "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "DPTEXT_TEST_TAG": tag})

    def ray_workers_up():
        return any(cmdline(pid).startswith(b"ray::RaySanitizer") for pid in tagged_processes(tag))

    ray_tree: set[tuple[int, int]] = set()

    def survivors() -> list[int]:
        alive = {p for p, start in ray_tree if (proc_stat(p) or (0, None))[1] == start}
        return sorted(alive | set(tagged_processes(tag)))

    try:
        assert _wait_for(ray_workers_up, 400, proc), "Ray never started its workers"
        assert len(tagged_processes(tag)) > 3  # gcs server, raylet, agents, workers
        ray_tree |= with_descendants(tagged_processes(tag))  # Ray's agents are the raylet's children
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t_kill = time.monotonic()
        # without a teardown the dashboard and runtime-env agents outlive the driver (by 30 s to minutes here)
        gone = _wait_for(lambda: survivors() == [], 12)
        took = time.monotonic() - t_kill
        left = [cmdline(pid)[:60] for pid in survivors()]
    finally:
        for pid in survivors():  # never leave this test's processes behind, whatever happened
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert gone, f"Ray processes survived the driver by {took:.0f} s: {left}"


def test_policy_entities_through_sanitize_corpus(tmp_path):
    rows = [{"id": 0, "text": "Maria Lopez moved to Berlin last spring."},
            {"id": 1, "text": "Write to maria@example.org about the invoice."}]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    p = sanitize(src, tmp_path / "out.jsonl", "--policy", "entities", "--entity-types", "PERSON,GPE,EMAIL", "-q")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["policy"] == {"name": "entities", "entity_types": ["PERSON", "GPE", "EMAIL"]}
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert "Maria Lopez" not in out[0]["text"] and "Berlin" not in out[0]["text"]
    assert "moved to" in out[0]["text"]  # outside the detected spans the text passes in clear
    assert "maria@example.org" not in out[1]["text"] and "about the invoice." in out[1]["text"]
    assert out[0]["privacy_report"]["policy"]["name"] == "entities"


def test_deep_record_is_rejected_and_nonfinite_numbers_are_written_as_null(tmp_path):
    """A record nested 2,000 deep goes to the rejects file (the run goes on); NaN/Infinity outside the text
    come out as null, so a strict JSON parser reads every output line."""
    deep = '{"id": "deep", "text": "The nurse", "meta": ' + "[" * 2000 + "]" * 2000 + "}"
    odd = '{"id": "nan", "text": "The doctor", "score": NaN, "more": [Infinity, -Infinity, 1.5]}'
    src = write_jsonl(tmp_path / "in.jsonl", GOOD[:2], [deep, odd])
    p = sanitize(src, tmp_path / "out.jsonl", "-q")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    rejects = (tmp_path / "out.jsonl.rejects.jsonl").read_text().splitlines()
    assert [json.loads(x)["line"] for x in rejects] == [3] and "nested deeper" in json.loads(rejects[0])["error"]

    def strict(constant):
        raise ValueError(f"{constant} is not JSON")

    out = [json.loads(x, parse_constant=strict) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in out] == [0, 1, "nan"]
    assert out[2]["score"] is None and out[2]["more"] == [None, None, 1.5]
