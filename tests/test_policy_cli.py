"""``dptext policy detect`` on the real detectors (command registered on a fresh app)."""

import json

import pytest
import typer
from typer.testing import CliRunner

from dptext.cli import policy
from dptext.errors import ParameterError

TEXT = "Call Ann Lee at (555) 201-3344 or ann@lee.io about card 4111-1111-1111-1111."


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    policy.register(a)

    @a.command()
    def other():  # a second command keeps "policy" a sub-command group
        pass

    return a


def test_detect_lists_spans_with_type_and_detector(app, tmp_path):
    f = tmp_path / "note.txt"
    f.write_text(TEXT, encoding="utf-8")
    res = CliRunner().invoke(app, ["policy", "detect", str(f)])
    assert res.exit_code == 0, res.output
    lines = [line.split("\t") for line in res.stdout.splitlines() if "\t" in line]
    found = {(cols[1], cols[3].strip("'")) for cols in lines}
    assert ("PERSON", "Ann Lee") in found and ("EMAIL", "ann@lee.io") in found
    assert ("CARD", "4111-1111-1111-1111") in found
    assert any(cols[1] == "PHONE" and "regex" in cols[2] for cols in lines)


def test_detect_json_from_stdin(app):
    res = CliRunner().invoke(app, ["policy", "detect", "-", "--json", "--type", "EMAIL"], input=TEXT)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [(s["type"], s["text"]) for s in data["spans"]] == [("EMAIL", "ann@lee.io")]
    assert TEXT[data["spans"][0]["start"]:data["spans"][0]["end"]] == "ann@lee.io"
    assert "in clear" in data["policy"]["scope"]


def test_unknown_type_is_a_parameter_error(app):
    res = CliRunner().invoke(app, ["policy", "detect", "-", "--type", "SHOE_SIZE"], input=TEXT)
    assert isinstance(res.exception, ParameterError) and res.exception.param == "entity_types"
