"""The command line as a new user meets it: usage mistakes, Ctrl-C, --version, hints (real subprocesses)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from procs import children, cmdline, tagged_processes

ROOT = Path(__file__).resolve().parents[1]


def run(*args, stdin=None, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], input=stdin, capture_output=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_error_line(p) -> str:
    err = p.stderr.decode()
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("args,needle", [
    (["perturb", "--mechansim", "rantext", "x"], "No such option: --mechansim"),
    (["attack", "--lsit"], "No such option: --lsit"),
    (["perturb", "--seed", "-5", "x"], "--seed"),
    (["sanitize-corpus", "in.jsonl", "out.jsonl", "-m", "rantext", "-e", "3", "--seed", "-5"], "--seed"),
    (["perturb", "-m", "cape", "-p", "n_buckets=abc", "x"], "--param n_buckets"),
    (["perturb", "-e", "abc", "x"], "--epsilon"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["infer", "--remote", "notaurl"], "--remote: invalid remote 'notaurl': not a URL"),
    (["infer", "--remote", "ftp://example.org"], "unsupported scheme 'ftp'"),
    (["perturb", "--policy", "nope", "x"], "--policy: unknown policy 'nope'"),
    (["perturb", "--policy", "entities", "--entity-types", "PERSON,NOPE", "x"], "--entity-types"),
    (["sanitize-corpus", "in.jsonl", "out.jsonl", "-m", "rantext", "-e", "3", "--policy", "nope"], "--policy"),
])
def test_usage_mistakes_are_one_line_exit_2(args, needle):
    p = run(*args)
    line = one_error_line(p)
    assert p.returncode == 2, p.stderr
    assert line.startswith("dptext: error: ") and needle in line, line
    assert p.stdout == b""


def test_version():
    from dptext import __version__

    p = run("--version")
    assert p.returncode == 0 and p.stdout.decode().strip() == f"dptext {__version__}" and p.stderr == b""


def test_both_click_copies_are_recognised():
    """typer >= 0.29 raises typer._click's classes; commands may raise click's own (dptext audit does)."""
    import click

    from dptext import cli

    copies = [click.exceptions]
    try:
        import typer._click.exceptions as bundled

        copies.append(bundled)
    except ImportError:  # typer < 0.29 uses click itself
        pass
    for mod in copies:
        assert cli._click_status(mod.UsageError("bad usage")) == 2
        assert cli._click_status(mod.BadParameter("bad value")) == 2
        failed = mod.ClickException("audit failed")
        failed.exit_code = 1
        assert cli._click_status(failed) == 1
    assert cli._click_status(ValueError("a bug")) is None  # real bugs still show their traceback


def test_epsilon_is_a_number_in_help():
    out = run("perturb", "--help", env={"COLUMNS": "200"}).stdout.decode()
    line = next(ln for ln in out.splitlines() if "--epsilon" in ln)
    assert "<float>" in line or "FLOAT" in line, line


def _spawn_on_pty(args):
    """The CLI with a pseudo-terminal as stdin and controlling terminal (stdout/stderr are pipes)."""
    master, slave = pty.openpty()

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", *args], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=ctty, env=dict(os.environ))
    os.close(slave)
    return proc, master


def _read_until(stream, needle: bytes, timeout: float) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    fd = stream.fileno()
    while needle not in buf and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf


def test_perturb_on_a_terminal_hints_and_ctrl_c_exits_130():
    proc, master = _spawn_on_pty(["perturb", "--seed", "1"])
    try:
        err = _read_until(proc.stderr, b"Ctrl-D", timeout=240)
        assert b"dptext: reading the text from the terminal; finish with Ctrl-D" in err, err
        os.write(master, b"\x03")  # Ctrl-C typed on the terminal: SIGINT to the foreground group
        proc.wait(timeout=60)
        rest = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.returncode == 130
    assert rest.decode().strip().splitlines() == ["dptext: interrupted"], rest
    assert proc.stdout.read() == b""


def test_perturb_on_a_terminal_reads_until_ctrl_d():
    proc, master = _spawn_on_pty(["perturb", "--seed", "1", "--json", "-q"])
    try:
        _read_until(proc.stderr, b"Ctrl-D", timeout=240)
        os.write(master, b"The doctor went home.\n\x04")
        out, _ = proc.communicate(timeout=240)
    finally:
        os.close(master)
    assert proc.returncode == 0
    result = json.loads(out)
    assert result["units"][0]["original"] == "The" and result["text"].strip()


def test_perturb_summary_line_names_dropped_units():
    p = run("perturb", "--seed", "1", "The doctor Zzyzxqqv went home.")
    assert p.returncode == 0 and p.stdout.strip()
    line = one_error_line(p)
    assert line.startswith("dptext: ") and "units perturbed" in line and "kept" in line
    dropped = int(line.split(" dropped")[0].rsplit(" ", 1)[1])
    assert dropped >= 1 and "--oov keep" in line, line
    keep = run("perturb", "--seed", "1", "--oov", "keep", "The doctor Zzyzxqqv went home.")
    assert " 0 dropped" in one_error_line(keep) and "--oov" not in one_error_line(keep)
    assert run("perturb", "--seed", "1", "-q", "The doctor went home.").stderr == b""


def test_license_is_apache_2_and_matches_pyproject():
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lic = meta["license"]
    lic = lic if isinstance(lic, str) else lic.get("text", "")
    assert "Apache-2.0" in lic
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text) > 10_000  # the full text, not a stub


def _worker_importing(pid: int) -> bool:
    """Whether a child of ``pid`` started by multiprocessing's spawn (a pool worker) is running Python code
    before its initializer: numpy is mapped (its import has begun), no shard has been handed to it yet."""
    for child in children(pid):
        try:
            if b"spawn_main" in cmdline(child) and "_multiarray_umath" in Path(f"/proc/{child}/maps").read_text():
                return True
        except OSError:
            pass
    return False


def _ctrl_c_corpus_run(tmp_path: Path, when: str, lines: int) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) to ``sanitize-corpus -j 2`` at one phase:
    ``imports`` (0.1 s in, while the command line loads), ``workers`` (as soon as a pool worker is importing,
    before it can have turned SIGINT off) or ``running`` (once output is being written). Whatever the phase: exit 130,
    the one line, no output, no temp file, no process left behind."""
    src = tmp_path / "in.jsonl"
    with open(src, "w") as f:
        for i in range(lines):  # far more than the run gets through before the Ctrl-C
            f.write(json.dumps({"id": i, "text": f"The patient saw the doctor at the clinic about fever {i}."}) + "\n")
    out = tmp_path / "out.jsonl"
    tag = f"dptext-test-{os.getpid()}-{time.time_ns()}"
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize-corpus", str(src), str(out), "-m",
                             "rantext", "-e", "3", "-j", "2", "--shard-size", "64", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "DPTEXT_TEST_TAG": tag})
    try:
        deadline = time.monotonic() + 300
        if when == "imports":
            time.sleep(0.1)
        while when != "imports" and time.monotonic() < deadline and proc.poll() is None:
            if when == "workers" and _worker_importing(proc.pid):
                break
            tmp = [p for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl.")]
            if when == "running" and tmp and tmp[0].stat().st_size > 0:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read()
        os.killpg(proc.pid, signal.SIGINT)
        out_b, err_b = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err_b
    assert err_b.decode().strip().splitlines() == ["dptext: interrupted"], err_b
    assert out_b == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no output, no temp file, no rejects
    time.sleep(1)
    assert tagged_processes(tag) == []  # no worker left behind


def test_ctrl_c_during_sanitize_corpus_exits_130_and_leaves_nothing(tmp_path):
    _ctrl_c_corpus_run(tmp_path, "running", 600_000)


@pytest.mark.parametrize("when,repeats", [("imports", 1), ("workers", 4)])
def test_ctrl_c_while_sanitize_corpus_starts_is_one_line_too(tmp_path, when, repeats):
    """A Ctrl-C while the command loads or while its workers start: no traceback from a worker that had not yet
    turned SIGINT off, nor from the imports. A worker's traceback races with the driver terminating it, so the
    worker phase is tried several times."""
    for r in range(repeats):
        (tmp_path / str(r)).mkdir()
        _ctrl_c_corpus_run(tmp_path / str(r), when, 50_000)


def _run_program_with_main(tmp_path: Path, body: str, **popen) -> subprocess.Popen:
    """``dptext.cli.run()`` (what the console script and ``python -m dptext.cli`` call) with ``main`` replaced
    by ``body`` (the source of a function ``main()``), run as ``python -m`` in a real interpreter."""
    (tmp_path / "fake_dptext.py").write_text(f"import dptext.cli as cli\n{body}\ncli.main = main\ncli.run()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "fake_dptext"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, **popen)


def test_an_interrupt_main_handled_inside_exec_still_exits_130(tmp_path):
    """CPython 3.11 marks a KeyboardInterrupt that passed through exec() of a string as unhandled, even once
    caught, and under ``python -m`` kills itself with SIGINT at exit: main's 130 must survive that."""
    proc = _run_program_with_main(
        tmp_path, "def main():\n    try:\n        exec('raise KeyboardInterrupt')\n    except KeyboardInterrupt:\n"
        "        return cli._interrupted()")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.decode().splitlines() == ["dptext: interrupted"], (proc.returncode, err)


def test_ctrl_c_during_shutdown_after_main_is_one_line_and_130(tmp_path):
    """A Ctrl-C while the interpreter runs exit handlers (a pool or Ray shutting down), after main returned 0:
    the one line and 130 at once, no traceback from the handler."""
    proc = _run_program_with_main(
        tmp_path, "import atexit, sys, time\ndef main():\n"
        "    atexit.register(lambda: (print('exiting', flush=True), time.sleep(60)))\n    return 0")
    try:
        assert proc.stdout.readline() == b"exiting\n"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 10  # not after the 60 s handler
    assert proc.returncode == 130 and err.decode().splitlines() == ["dptext: interrupted"], (proc.returncode, err)


def test_spaces_name_prints_the_rantext_calibration():
    p = run("spaces", "cl100k-11k")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().strip().splitlines()
    assert lines[0].startswith("cl100k-11k: 11000 units x 384 dims")
    cal = lines[1]
    assert cal.startswith("rantext noise (calibrated on 'happy'): Z(eps) = ") and "at eps 2/6/10/14: " in cal, cal
    achieved, targets = cal.split("at eps 2/6/10/14: ")[1].split(" % (targets ")
    for got, want in zip(achieved.split("/"), targets.rstrip(" %)").split("/")):
        assert abs(float(got) - float(want)) <= 1.5  # within 1.5 points of the paper's targets


def test_santext_at_huge_epsilon_keeps_every_unit():
    from dptext.mechanisms.spec import EPSILON_MAX

    p = run("perturb", "-m", "santext", "-e", f"{EPSILON_MAX:g}", "--seed", "1", "-q", "the surgeon")
    assert p.returncode == 0, p.stderr
    assert b"Warning" not in p.stderr  # no float overflow (a cold cache may add progress lines)
    assert p.stdout.decode().strip() == "the surgeon"
