"""The `dptext` command: perturb, transition, spaces; one-line errors."""

import json
import os
import subprocess
import sys

import pytest


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], input=stdin, capture_output=True,
                          timeout=300, env={**os.environ})


def test_perturb_json():
    p = run("perturb", "--mechanism", "santext+", "--epsilon", "2", "--seed", "1", "--json",
            "The doctor, tired, went home.")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert set(d) == {"text", "units", "privacy"}
    assert [u["original"] for u in d["units"]][:3] == ["The", "doctor", ","]
    assert {u["action"] for u in d["units"]} <= {"perturbed", "kept", "dropped"}
    assert d["privacy"]["mechanism"] == "santext+" and d["privacy"]["claim"]["kind"] == "metric-dp"


def test_perturb_stdin_and_seed_reproducible():
    a = run("perturb", "--seed", "5", "-", stdin=b"The quick brown fox jumps over the lazy dog.")
    b = run("perturb", "--seed", "5", stdin=b"The quick brown fox jumps over the lazy dog.")
    assert a.returncode == 0 and a.stdout == b.stdout and a.stdout.strip()


def test_transition_top_k_json():
    p = run("transition", "--mechanism", "custext", "--epsilon", "3", "--top", "5", "--json", "hospital")
    assert p.returncode == 0, p.stderr
    items = json.loads(p.stdout)
    assert len(items) == 5 and items[0]["unit"] == "hospital"
    probs = [i["prob"] for i in items]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1


@pytest.mark.parametrize("args,stdin,needle", [
    (["perturb", "--epsilon", "0", "x"], None, "epsilon"),
    (["perturb", "--epsilon", "nan", "x"], None, "epsilon"),
    (["perturb", "--epsilon", "abc", "x"], None, "epsilon"),
    (["perturb", "--mechanism", "nope", "x"], None, "unknown mechanism"),
    (["perturb", "--space", "nope", "x"], None, "unknown space"),
    (["perturb", "   "], None, "empty"),
    (["perturb"], b"", "empty"),
    (["perturb"], b"\xff\xfeabc", "UTF-8"),
    (["perturb", "--oov", "boom", "x"], None, "OOV"),
    (["transition", "--mechanism", "santext", "qqqzzzxxyy"], None, "not in the vocabulary"),
    (["context-transition", "fox", "-c", "The fox ran.", "-m", "rantext"], None, "does not depend on context"),
    (["context-transition", "fox", "-c", "The fox ran.", "-m", "dp-prompt"], None, "rewrites whole documents"),
])
def test_user_errors_are_one_line(args, stdin, needle):
    p = run(*args, stdin=stdin)
    assert p.returncode == 2
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "Traceback" not in p.stderr.decode()
    assert p.stdout == b""


def test_spaces_listing():
    p = run("spaces")
    assert p.returncode == 0
    out = p.stdout.decode()
    assert "cl100k-11k" in out and "glove-50d" in out and "smollm2" in out
