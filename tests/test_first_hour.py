"""The first hour with dptext, as a new user meets it (issue 25): each check runs the real command in a
subprocess and reads what a person would read (stdout, stderr, exit status)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest
from procs import read_pty

SENTENCE = "Café naïve résumé and Zoë went home."


def run(*args, stdin=None, env=None, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})})


def one_error_line(p) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert p.returncode == 2, p.stderr
    return lines[0]


# ----- 1. dptext mechanisms -----------------------------------------------------------------------------------------
def test_mechanisms_lists_every_registered_mechanism():
    from dptext.mechanisms import MECHANISMS

    p = run("mechanisms")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    rows = p.stdout.splitlines()
    assert [r.split()[0] for r in rows] == sorted(MECHANISMS)
    spaces = {r.split()[0]: r.split()[1] for r in rows}
    assert spaces["rantext"] == "space=cl100k-11k" and spaces["dp-prompt"] == "space=none"
    assert len({r.index(" space=") for r in rows}) == 1  # one column


# ----- 4. attack --help names only options that exist ---------------------------------------------------------------
def test_attack_list_exists_and_every_option_the_help_names_exists():
    from dptext.attacks import ATTACKS

    listed = run("attack", "--list")
    assert listed.returncode == 0, listed.stderr
    assert [r.split()[0] for r in listed.stdout.splitlines()] == sorted(ATTACKS)
    import typer

    from dptext.cli import app

    command = typer.main.get_command(app).commands["attack"]
    declared = {o for param in command.params for o in (*param.opts, *param.secondary_opts)}
    help_text = run("attack", "--help").stdout
    mentioned = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text))
    assert "--list" in declared and mentioned - {"--help"} <= declared, mentioned - declared


# ----- 5. a TEXT argument that names a file -------------------------------------------------------------------------
def test_perturb_refuses_a_file_name_as_text_and_reads_it_with_file(tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("The doctor went home.\n", encoding="utf-8")
    p = run("perturb", "-m", "santext", "note.txt", cwd=tmp_path)
    line = one_error_line(p)
    assert "'note.txt' is a file" in line and "--file note.txt" in line and p.stdout == ""
    ok = run("perturb", "-m", "santext", "--seed", "3", "--json", "--file", "note.txt", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    units = json.loads(ok.stdout)["units"]
    assert [u["original"] for u in units] == ["The", "doctor", "went", "home", "."]  # the file's words
    assert "no such file" in one_error_line(run("perturb", "--file", "missing.txt", cwd=tmp_path))


# ----- 6. one rule on ε ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value,words", [
    ("1e308", "at most 10000"), ("nan", "NaN (not a number)"), ("inf", "infinite"), ("0", "greater than 0"),
])
def test_epsilon_out_of_range_is_one_line_everywhere(value, words):
    line = one_error_line(run("perturb", "-e", value, "--seed", "0", "hello"))
    assert line.startswith("dptext: error: --epsilon:") and words in line
    attack = one_error_line(run("attack", "-m", "santext", "-e", value, "--private", "x.txt"))
    assert words in attack


def test_playground_applies_the_same_epsilon_rule():
    from dptext.mechanisms.spec import EPSILON_MAX
    from dptext.web.engine import Settings, WebError

    assert Settings.parse({"epsilon": EPSILON_MAX}).epsilon == EPSILON_MAX
    for raw, words in [(EPSILON_MAX * 1.5, "at most 10000"), ("NaN", "ε is NaN"), (0, "ε must be greater than 0"),
                       (None, "ε is required"), ("", "ε is required"), ("inf", "ε is infinite")]:
        with pytest.raises(WebError) as exc:
            Settings.parse({"epsilon": raw})
        assert words in str(exc.value) and "None" not in str(exc.value) and exc.value.field == "epsilon"


# ----- 7. whitespace between units ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["rantext", "santext"])  # subword (cl100k) and word (glove) spaces
def test_whitespace_between_units_survives_dropped_pieces(mechanism):
    p = run("perturb", "-m", mechanism, "--seed", "1", "--json", SENTENCE)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert any(u["action"] == "dropped" for u in out["units"])
    # which input word (whitespace-separated) each unit came from, by finding the units in order
    cursor, word_of = 0, []
    for u in out["units"]:
        at = SENTENCE.index(u["original"], cursor)
        word_of.append(len(SENTENCE[:at].split()) - (0 if at == 0 or SENTENCE[at - 1].isspace() else 1))
        cursor = at + len(u["original"])
    surviving = {w for w, u in zip(word_of, out["units"]) if u["output"] is not None}
    # words that keep a unit stay apart: the output has exactly one word per such input word
    assert len(out["text"].split()) == len(surviving) >= 3, out["text"]


# ----- 10. smaller things -------------------------------------------------------------------------------------------
def test_spaces_columns_line_up():
    p = run("spaces")
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert len(rows) >= 4
    starts = {len(r) - len(r.split(None, 1)[1]) for r in rows}  # where the status column starts
    assert len(starts) == 1, rows
    assert all(re.match(r"\S+\s+(cached|not built)\s{2,}\S", r) for r in rows), rows


@pytest.mark.parametrize("command", [["perturb"], ["attack"], ["sanitize-corpus"], ["bench", "run"], []])
def test_help_shows_no_type_beside_flags(command):
    p = run(*command, "--help")
    assert p.returncode == 0 and "<bool>" not in p.stdout, p.stdout
    if command == ["perturb"]:
        assert "<float>" in p.stdout or "float" in p.stdout  # valued options keep their type


def test_sanitize_corpus_help_states_the_seed_streams_of_the_code():
    from dptext.batch.sanitize import STREAM_BLOCK

    text = " ".join(run("sanitize-corpus", "--help").stdout.replace("│", " ").split())
    assert f"blocks of {STREAM_BLOCK} consecutive record positions" in text
    assert "block b draws its noise from child b of SeedSequence(S)" in text


def test_dp_prompt_warns_when_its_output_cannot_be_about_the_text():
    # max_tokens 2: the warning threshold is 2·2·ln 2 = 2.77 (document ε), so 2 warns and 3 does not
    from dptext.cli._common import unrelated_output_warning
    from dptext.mechanisms.spec import MechanismSpec

    spec = MechanismSpec(mechanism="dp-prompt", epsilon=3, options={"max_tokens": 2})
    assert unrelated_output_warning(spec.build()) is None
    p = run("perturb", "-m", "dp-prompt", "-e", "2", "-p", "max_tokens=2", "--seed", "0", "The nurse left.")
    assert p.returncode == 0, p.stderr
    warning = [ln for ln in p.stderr.splitlines() if ln.startswith("dptext: warning:")]
    assert len(warning) == 1 and "unrelated to the text" in warning[0] and "1.65x" in warning[0]


# ----- 3. a busy port -----------------------------------------------------------------------------------------------
@pytest.fixture
def busy_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    yield s.getsockname()[1]
    s.close()


def test_playground_on_a_busy_port_is_one_line_and_exit_2(busy_port):
    t0 = time.monotonic()
    p = run("playground", "--port", str(busy_port), timeout=120)
    line = one_error_line(p)
    assert f"port {busy_port} on 127.0.0.1 is already in use" in line and "--port" in line
    assert "startup" not in p.stderr.lower() and p.stdout == ""
    print(f"\nplayground on a busy port: exit 2 after {time.monotonic() - t0:.1f} s")


def test_serve_on_a_busy_port_is_one_line_and_exit_2(busy_port, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("upstream:\n  base_url: http://127.0.0.1:9/v1\n  model: m\n"
                   "privacy: {mechanism: rantext, epsilon: 3}\n"
                   f"state_dir: {tmp_path / 'state'}\nauth: {{allow_anonymous: true}}\n", encoding="utf-8")
    p = run("serve", "-c", str(cfg), "--port", str(busy_port), timeout=120)
    line = one_error_line(p)
    assert f"port {busy_port} on 127.0.0.1 is already in use" in line
    assert "startup" not in p.stderr.lower() and "dptext serve on" not in p.stderr


# ----- 2. progress: every stage shows real counts, every one-time build says what, how long, where ------------------
def test_a_stage_shows_its_time_and_the_counts_of_the_work_inside_it():
    from dptext.progress import LogProgress, stage

    now = [0.0]
    lines: list[str] = []
    log = LogProgress(interval=1.0, write=lines.append, clock=lambda: now[0])
    with stage(log, "fitting bayes"):
        now[0] = 2.0
        log._tick(log._tasks[0])  # a stage alone: its running time, no count it does not have
        inner = log.add_task("finding the units santext+ samples in 400 sentences", total=400)
        for _ in range(4):
            now[0] += 1.5
            log.advance(inner, 100)
            for t in list(log._tasks.values()):
                log._tick(t)
        now[0] += 0.5
    assert lines[0] == "dptext: fitting bayes"
    assert lines[1] == "dptext: fitting bayes: running, 2.0 s"
    counted = [ln for ln in lines if "sentences:" in ln]
    assert counted[0].endswith("100/400 (25%), 1.5 s") and counted[-1].endswith("400/400 (100%), 6.0 s")
    assert lines[-1] == "dptext: fitting bayes: done, 8.5 s"
    assert not [ln for ln in lines if "done," in ln and "fitting" in ln and ln != lines[-1]]
    assert not [ln for ln in lines if "0 done" in ln or "None" in ln], lines


def test_the_terminal_bar_shows_no_count_for_a_stage():
    from dptext.progress import _rich_progress

    prog = _rich_progress()
    count = prog.columns[2]
    stage_id, counted_id = prog.add_task("building", total=None), prog.add_task("rows", total=8944, completed=768)
    assert str(count.render(prog.tasks[stage_id])) == ""
    assert str(count.render(prog.tasks[counted_id])) == "768/8944"


def test_a_cold_space_build_says_what_how_long_and_where(tmp_path):
    p = run("spaces", "glove-50d", env={"DPTEXT_CACHE_DIR": str(tmp_path)})  # a fresh, empty cache
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    space = next(ln for ln in lines if "building embedding space glove-50d" in ln)
    assert re.search(r"\(one time, about \d+ s; cached in .*\)", space) and str(tmp_path) in space
    assert lines[0] == space  # said before the work starts, not after
    calib = next(ln for ln in lines if "building RANTEXT noise calibration for glove-50d" in ln)
    assert "one time, about" in calib and str(tmp_path) in calib
    warm = run("spaces", "glove-50d", env={"DPTEXT_CACHE_DIR": str(tmp_path)})
    assert warm.returncode == 0 and "building" not in warm.stderr  # cached: nothing to announce


def test_attack_progress_counts_the_shadow_corpus(tmp_path):
    from dptext.data import get_dataset

    texts = list(get_dataset("tweets").texts)
    (tmp_path / "private.txt").write_text("\n".join(texts[:40]), encoding="utf-8")
    (tmp_path / "shadow.txt").write_text("\n".join(texts[40:640]), encoding="utf-8")
    p = run("attack", "-m", "santext+", "-e", "2", "-a", "bayes", "--private", str(tmp_path / "private.txt"),
            "--shadow", str(tmp_path / "shadow.txt"), "--n-units", "50", "--seed", "0",
            env={"DPTEXT_PROGRESS_INTERVAL": "0"})
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert not [ln for ln in lines if ln.endswith(" done") or " 0 done" in ln or "None" in ln], lines
    assert any(re.search(r"finding the units santext\+ samples in 600 sentences: 600/600 \(100%\)", ln)
               for ln in lines), lines


def _private_tweets(tmp_path, n=40):
    from dptext.data import get_dataset

    path = tmp_path / "private.txt"
    path.write_text("\n".join(list(get_dataset("tweets").texts)[:n]), encoding="utf-8")
    return path


def test_attack_perturbing_stage_counts_sentences_in_log_lines(tmp_path):
    """Piped: the private sentences are counted (k/40, rising), never a bare 'running' clock; when --n-units is
    reached early the task closes at the number it did (m/m, m < 40)."""
    p = run("attack", "-m", "santext+", "-e", "2", "-a", "knn", "--private", str(_private_tweets(tmp_path)),
            "--n-units", "60", "--seed", "0", env={"DPTEXT_PROGRESS_INTERVAL": "0"})
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "perturbing private sentences" in ln]
    assert lines and not [ln for ln in lines if "running" in ln or "None" in ln or " done" in ln], lines
    counts = [tuple(map(int, re.search(r": (\d+)/(\d+) \(", ln).groups())) for ln in lines]
    assert all(total == 40 for _, total in counts[:-1]) and len(counts) >= 3, counts
    done = [k for k, _ in counts[:-1]]
    assert done == sorted(done) and done[-1] > done[0], counts  # rising (the heartbeat repeats a count too)
    last_done, last_total = counts[-1]
    assert last_done == last_total < 40 and last_done >= counts[-2][0], counts
    assert lines[-1].split(": ")[-1].startswith(f"{last_done}/{last_done} (100%)")


def test_attack_perturbing_stage_counts_sentences_on_a_terminal(tmp_path):
    """On a terminal (stderr is a pseudo-terminal) the bar of the perturbing stage shows k/40."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "attack", "-m", "santext+", "-e", "2", "-a", "knn",
                             "--private", str(_private_tweets(tmp_path)), "--seed", "0"],
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env={**os.environ, "TERM": "xterm", "COLUMNS": "200"})
    os.close(slave)
    seen = read_pty(master)
    proc.communicate(timeout=300)
    os.close(master)
    assert proc.returncode == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace"))
    shown = re.findall(r"perturbing private sentences with santext\+[^\n\r]*?(\d+)/40", text)
    assert shown and max(map(int, shown)) > 0, text[-2000:]


def test_cape_calibrate_labels_the_number_it_prints(monkeypatch):
    """The value is Cape's clip bound B; the device pass itself is tests/test_cape.py's (stubbed here)."""
    from typer.testing import CliRunner

    from dptext.cli import app
    from dptext.mechanisms import cape

    class Device:
        name = "stub-device"

    monkeypatch.setattr(cape, "default_device", lambda: Device())
    monkeypatch.setattr(cape, "calibration_units", lambda space, sample: 321)
    monkeypatch.setattr(cape, "calibrate_clip", lambda device, space, sample, quantile: 17.25)
    out = CliRunner().invoke(app, ["cape-calibrate", "--quantile", "0.99"])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip() == ("Cape clip bound B = 17.250000 (quantile 0.99 of |logit| over 321 units of "
                                  "smollm2, device stub-device)")
