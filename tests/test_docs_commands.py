"""Every shell command shown in README.md and docs/*.md runs: exit 0 and no traceback.

Commands come from fenced ``bash`` / ``sh`` / ``shell`` / ``console`` blocks (one command per line,
``\\`` continuations joined, ``$ `` prompts and comment lines dropped). Each runs with ``bash -c`` in a
scratch folder that holds links to the repository's ``.venv`` (the interpreter running these tests),
``examples/``, ``sweeps/``, ``scripts/`` and ``docs/``, and small ``note.txt`` / ``notes.txt`` files;
stdin is a short text, so a command reading ``-`` gets bounded input.

A command that cannot run here is marked in the document, in HTML comments (invisible when rendered)
on the lines just above its block:

* ``<!-- doc-test: skip REASON -->``: no command of the block runs; it is listed with its reason;
* ``<!-- doc-test: skip-command PREFIX :: REASON -->``: commands starting with PREFIX do not run;
* ``<!-- doc-test: smaller PREFIX => COMMAND -->``: a command starting with PREFIX runs as COMMAND
  (a smaller size, or a placeholder filled in).

An unmarked command that fails makes the test fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(bash|sh|shell|console)\s*$")
MARK = re.compile(r"^<!--\s*doc-test:\s*(skip-command|skip|smaller)\s+(.*?)\s*-->\s*$")
LINKS = (".venv", "examples", "sweeps", "scripts", "docs")
NOTE = "The patient John Smith was admitted to St. Mary's Hospital on Monday with chest pain.\n"
TIMEOUT = 180


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    text: str  # as shown in the document
    run: str | None  # what runs (None: not runnable)
    reason: str = ""  # why not runnable, or why it runs in a smaller form


def _marks(lines: list[str], fence: int) -> list[tuple[str, str]]:
    """The doc-test comments on the lines just above the fence at index ``fence``."""
    out = []
    i = fence - 1
    while i >= 0 and MARK.match(lines[i].strip()):
        m = MARK.match(lines[i].strip())
        out.append((m.group(1), m.group(2)))
        i -= 1
    return out[::-1]


def _apply(cmd: str, where: str, marks: list[tuple[str, str]]) -> Command:
    for kind, arg in marks:
        if kind == "skip":
            return Command(where, cmd, None, arg)
        if kind == "skip-command":
            prefix, _, reason = arg.partition("::")
            if cmd.startswith(prefix.strip()):
                return Command(where, cmd, None, reason.strip())
        if kind == "smaller":
            prefix, _, repl = arg.partition("=>")
            if cmd.startswith(prefix.strip()):
                return Command(where, cmd, repl.strip(), "smaller: " + repl.strip())
    return Command(where, cmd, cmd)


def extract(text: str, name: str) -> list[Command]:
    lines = text.splitlines()
    out: list[Command] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        marks, console = _marks(lines, i), m.group(1) == "console"
        i += 1
        pending, start = "", None
        while i < len(lines) and not lines[i].strip().startswith("```"):
            line = lines[i].rstrip()
            if console:
                line = line[2:] if line.startswith("$ ") else ("" if not pending else line)
            if start is None:
                start = i + 1
            if line.endswith("\\"):
                pending += line[:-1] + " "
            else:
                cmd = (pending + line).strip()
                pending = ""
                if cmd and not cmd.startswith("#"):
                    out.append(_apply(cmd, f"{name}:{start}", marks))
                start = None
            i += 1
        i += 1
    return out


def all_commands() -> list[Command]:
    return [c for doc in DOCS for c in extract(doc.read_text(encoding="utf-8"), doc.relative_to(ROOT).as_posix())]


COMMANDS = all_commands()
RUNNABLE = [c for c in COMMANDS if c.run is not None]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("doc-commands")
    targets = {".venv": Path(sys.prefix)} | {n: ROOT / n for n in LINKS if n != ".venv"}
    for name, target in targets.items():
        (d / name).symlink_to(target, target_is_directory=True)
    for name in ("note.txt", "notes.txt"):
        (d / name).write_text(NOTE)
    return d


def run_command(cmd: str, cwd: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "NO_COLOR": "1", "COLUMNS": "120"}
    env.setdefault("DPTEXT_CACHE_DIR", str(ROOT / ".dptext-cache"))
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, input=NOTE, capture_output=True, text=True,
                          timeout=timeout)


def check(proc: subprocess.CompletedProcess) -> str | None:
    """None when a command succeeded: exit 0 and no traceback anywhere in its output."""
    if proc.returncode != 0:
        return f"exit {proc.returncode}"
    if "Traceback" in proc.stdout + proc.stderr:
        return "a traceback in its output"
    return None


@pytest.mark.parametrize("cmd", RUNNABLE, ids=[c.where for c in RUNNABLE])
def test_documented_command_runs(cmd, workdir):
    proc = run_command(cmd.run, workdir)
    why = check(proc)
    assert why is None, f"{cmd.where}: `{cmd.run}` failed ({why})\n{proc.stderr[-2000:]}\n{proc.stdout[-1000:]}"


def test_commands_found_and_every_exception_is_explained():
    assert len(COMMANDS) >= 15 and len(RUNNABLE) >= 8
    assert any(c.run.startswith(".venv/bin/dptext mechanisms") for c in RUNNABLE)  # the command that crashed
    for c in COMMANDS:
        if c.run is None or c.run != c.text:
            assert len(c.reason.split()) >= 3, f"{c.where}: `{c.text}` is not run without a reason"
    print("\nnot run:\n" + "\n".join(f"  {c.where}: {c.text}  -- {c.reason}" for c in COMMANDS if c.run is None))


def test_extraction_and_marks_on_a_sample_document(tmp_path):
    doc = "\n".join([
        "```bash", "echo one   # a comment", "# only a comment", "echo two \\", "  three", "```",
        "<!-- doc-test: skip-command dptext serve :: starts a server -->",
        "<!-- doc-test: smaller dptext bench run => echo small -->",
        "```sh", "dptext serve --port 1", "dptext bench run big.yaml", "python -c 'raise SystemExit(3)'", "```",
        "<!-- doc-test: skip needs an API key -->", "```console", "$ echo never", "output line", "```",
        "```python", "print('not shell')", "```"])
    cmds = extract(doc, "X.md")
    assert [(c.where, c.text, c.run) for c in cmds] == [
        ("X.md:2", "echo one   # a comment", "echo one   # a comment"),
        ("X.md:4", "echo two    three", "echo two    three"),
        ("X.md:10", "dptext serve --port 1", None),
        ("X.md:11", "dptext bench run big.yaml", "echo small"),
        ("X.md:12", "python -c 'raise SystemExit(3)'", "python -c 'raise SystemExit(3)'"),
        ("X.md:16", "echo never", None)]
    # an unmarked command that crashes is a failure, whether by exit status or by a printed traceback
    assert check(run_command(cmds[4].run, tmp_path)) == "exit 3"
    tb = run_command("python -c 'import sys; sys.stderr.write(\"Traceback (most recent call last)\\n\")'", tmp_path)
    assert check(tb) == "a traceback in its output"
    assert check(run_command(cmds[0].run, tmp_path)) is None
