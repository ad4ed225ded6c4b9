"""The playground's JSON API and the proxy dashboard router, against real uvicorn servers on loopback.

Rows are checked against closed forms computed here from the space's embeddings (SANTEXT:
``Pr(y | x) ∝ exp(−ε·d(x, y)/2)``), survival counts and retention against those rows with
binomial bounds at fixed seeds, and the playground's own privacy (no text in logs, loopback by
default, size caps, a same-origin-only Content-Security-Policy).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from web_fixtures import base, client, dashboard_app, fake_snapshot, serve_app  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]
TEXT = "My doctor said the test results were normal, but she wants to see me again in March."
CANARY = "Zanzibarquux"


def santext_row(word: str, eps: float) -> tuple[np.ndarray, list[str]]:
    """Closed form ``Pr(y | x) = exp(−ε d(x,y)/2) / Σ exp(−ε d(x,y')/2)`` from the raw embeddings."""
    from dptext.spaces import get_space

    sp = get_space("glove-50d")
    e = np.asarray(sp.embeddings, dtype=np.float64)
    d = np.sqrt(np.maximum(((e - e[sp.lookup(word)]) ** 2).sum(axis=1), 0.0))
    w = np.exp(-eps * (d - d.min()) / 2)
    return w / w.sum(), sp.units


def test_mechanisms_lists_every_registered_mechanism_with_its_default_space(client):
    from dptext.mechanisms import MECHANISMS

    data = client.get("/api/mechanisms").json()
    got = {m["name"]: m["default_space"] for m in data["mechanisms"]}
    per_unit = {name: cls.default_space for name, cls in MECHANISMS.items() if cls.per_unit}
    assert got == per_unit and {"rantext", "santext", "cape"} <= set(got) and "dp-prompt" not in got
    assert all(space for space in got.values())  # a per-unit mechanism works over an embedding space
    assert data["oov"] == ["drop", "random", "keep"] and data["retention_epsilons"] == list(range(1, 17))
    contextual = {m["name"] for m in data["mechanisms"] if m["contextual"]}
    assert {"cape", "stencil"} <= contextual and not contextual & {"rantext", "santext", "custext", "noise-mapper"}
    assert next(m for m in data["mechanisms"] if m["name"] == "high-freq")["dp"] is False


def test_perturb_units_rebuild_both_texts_and_classes_match_outputs(client):
    body = {"mechanism": "santext", "epsilon": 6, "oov": "drop", "text": TEXT + " xqzzyv", "seed": 7}
    res = client.post("/api/perturb", json=body).json()
    units = res["units"]
    assert "".join(u["ws"] + u["original"] for u in units) == body["text"]
    classes = {u["class"] for u in units}
    assert classes <= {"perturbed", "self", "kept", "dropped"} and {"kept", "dropped"} <= classes
    for u in units:
        same = u["output"] is not None and u["output"].lower() == u["original"].lower()
        assert (u["class"] == "self") == (same and u["sampled"]), u
        assert (u["class"] == "dropped") == (u["output"] is None)
        assert u["sampled"] == (u["epsilon"] is not None)
    counts = res["privacy"]["counts"]
    assert counts == {c: sum(u["class"] == c for u in units) for c in ("perturbed", "self", "kept", "dropped")}
    assert "".join(u["ws"] + u["output"] for u in units if u["output"] is not None) == res["text"]
    assert res["privacy"]["claim"]["kind"] == "metric-dp" and "embedding space" in res["privacy"]["scope"]
    # a fixed seed reproduces the run; OS entropy (no seed) is the default
    assert client.post("/api/perturb", json=body).json()["text"] == res["text"]


def test_transition_top5_is_the_closed_form_santext_row(client):
    eps = 4.0
    got = client.post("/api/transition", json={"mechanism": "santext", "epsilon": eps, "context": TEXT,
                                               "position": 1, "top": 5}).json()
    row, units = santext_row("doctor", eps)
    best = np.argsort(-row, kind="stable")[:5]
    assert got["unit"] == "doctor" and got["contextual"] is False
    assert [t["unit"] for t in got["top"]] == [units[i] for i in best]
    assert np.allclose([t["prob"] for t in got["top"]], row[best], rtol=1e-4)
    assert got["self_prob"] == pytest.approx(row[units.index("doctor")], rel=1e-4)


def test_transition_of_a_kept_unit_says_why_without_a_row(client):
    got = client.post("/api/transition", json={"mechanism": "santext", "epsilon": 3, "context": TEXT,
                                               "position": len(TEXT.split()) + 1}).json()  # the final "."
    assert got["top"] == [] and "punctuation" in got["note"]


def test_twenty_runs_survival_matches_pr_x_given_x(client):
    """'doctor' repeated 40 times × 20 runs: survivals ~ Binomial(800, Pr(x|x)) (4.5 σ bounds)."""
    eps = 8.0
    text = " ".join(["doctor"] * 40)
    res = client.post("/api/runs", json={"mechanism": "santext", "epsilon": eps, "text": text, "n": 20,
                                         "seed": 11}).json()
    assert res["n"] == 20 and len(res["units"]) == 40
    for u in res["units"]:
        assert sum(c for _, c in u["outputs"]) <= 20 and u["distinct"] >= len(u["outputs"])
    k = sum(u["survived"] for u in res["units"])
    p = santext_row("doctor", eps)[0].max()
    sd = math.sqrt(800 * p * (1 - p))
    assert abs(k - 800 * p) < 4.5 * sd, (k, 800 * p)


def test_retention_estimate_matches_the_closed_form(client):
    text = "doctor nurse river music"
    res = client.post("/api/retention", json={"mechanism": "santext", "text": text, "seed": 3}).json()
    assert res["epsilons"] == list(range(1, 17)) and not res["partial"]
    runs = int(re.search(r"from (\d+) runs", res["method"]).group(1))
    from dptext.spaces import get_space

    units = get_space("glove-50d").units
    for eps in (4.0, 8.0):
        expect = np.mean([santext_row(w, eps)[0][units.index(w)] for w in text.split()])
        n = runs * 4
        sd = math.sqrt(n * expect * (1 - expect)) / n
        assert abs(res["retention"][int(eps) - 1] - expect) < 4.5 * sd + 1e-9, (eps, expect)


def test_cape_rows_are_in_context_and_retention_agrees_with_them(client):
    """Cape's device model is causal: the row of 'doctor' depends on the words before it, not after.
    The retention curve (device logits once, bucket law per ε) must equal the mean over word units
    of the rows' Pr(x | x) from /api/transition (stopwords kept: 1)."""
    def row(context, position):
        return client.post("/api/transition", json={"mechanism": "cape", "epsilon": 3, "context": context,
                                                    "position": position}).json()

    text = "The doctor said my results were normal."
    a, b, c = row(text, 1), row("The doctor", 1), row("A lonely doctor", 2)
    assert a["contextual"] and a["unit"] == c["unit"] == "doctor"
    assert a["top"] == b["top"]
    assert a["top"] != c["top"] or a["self_prob"] != c["self_prob"]
    res = client.post("/api/perturb", json={"mechanism": "cape", "epsilon": 3, "text": text, "seed": 5}).json()
    words = [u for u in res["units"] if u["original"] != "."]
    unit_eps = [u["epsilon"] for u in words if u["sampled"]]
    bound = res["privacy"]["claim"]["bound"]  # each unit's proven loss is within the worst case
    assert unit_eps and all(0 < e <= bound + 1e-9 for e in unit_eps) and len(set(unit_eps)) > 1
    assert res["privacy"]["unit_epsilon_max"] == max(unit_eps) and res["privacy"]["unit_epsilon_is_proven_loss"]
    # one scope in all three places: the claim, the plain text and (tests/test_web_browser.py) the claim line
    technical, plain = res["privacy"]["claim"]["scope"], res["privacy"]["scope"]
    assert "sampled" in technical and "stopwords" in technical and "any two inputs of V in" not in technical
    assert "Stopwords" in plain and "not protected" in plain and "different sets" not in plain
    expect = np.mean([row(text, u["pos"])["self_prob"] if u["sampled"] else 1.0 for u in words])
    curve = client.post("/api/retention", json={"mechanism": "cape", "text": text}).json()
    assert curve["method"].startswith("exact") and curve["retention"][2] == pytest.approx(expect, rel=1e-6)


def test_entity_policies_keep_public_text_and_set_span_epsilon(client):
    pytest.importorskip("dptext.privacy.policy")
    text = "Please write to ann@example.com about the rent before Friday."
    base = {"mechanism": "santext", "epsilon": 4, "text": text, "seed": 2}
    res = client.post("/api/perturb", json={**base, "policy": "entities"}).json()
    private = [s for s in res["spans"] if s["private"]]
    assert any("ann@example.com" in s["text"] for s in private)
    assert "".join(s["text"] for s in res["spans"]) == text
    for u in res["units"]:
        if not res["spans"][u["span"]]["private"]:
            assert (u["class"], u["reason"], u["output"]) == ("kept", "public", u["original"])
    assert res["privacy"]["policy"]["name"] == "entities"
    tiered = client.post("/api/perturb", json={**base, "policy": "tiered", "entity_epsilon": 1}).json()
    assert all(s["private"] for s in tiered["spans"])
    for u in tiered["units"]:
        if u["sampled"]:
            assert u["epsilon"] == tiered["spans"][u["span"]]["epsilon"]
            assert u["epsilon"] == (1 if tiered["spans"][u["span"]]["label"] else 4)
    r = client.post("/api/perturb", json={**base, "policy": "tiered", "entity_epsilon": 9})
    assert r.status_code == 400 and r.json()["field"] == "entity_epsilon"


@pytest.mark.parametrize("body,status,field,words", [
    ({"text": "   "}, 400, "text", "empty"),
    ({"text": TEXT, "epsilon": 0}, 400, "epsilon", "greater than 0"),
    ({"text": TEXT, "epsilon": "abc"}, 400, "epsilon", "number"),
    ({"text": TEXT, "epsilon": None}, 400, "epsilon", "ε is required"),
    ({"text": TEXT, "epsilon": ""}, 400, "epsilon", "ε is required"),
    ({"text": TEXT, "epsilon": "NaN"}, 400, "epsilon", "ε is NaN (not a number)"),
    ({"text": TEXT, "epsilon": 1e308}, 400, "epsilon", "at most 10000"),
    ({"text": TEXT, "mechanism": "nope"}, 400, "mechanism", "unknown mechanism"),
    ({"text": TEXT, "mechanism": "dp-prompt"}, 400, "mechanism", "whole documents"),
    ({"text": TEXT, "oov": "maybe"}, 400, "oov", "OOV"),
    ({"text": "a" * 20_001}, 413, "text", "at most 20,000"),
    ({"text": TEXT, "seed": -1}, 400, "seed", "seed"),
])
def test_bad_input_is_one_clear_message_naming_the_field(client, body, status, field, words):
    r = client.post("/api/perturb", json=body)
    assert r.status_code == status and r.json()["field"] == field and words in r.json()["error"]


def test_a_1mb_paste_is_refused_before_it_is_read(client):
    r = client.post("/api/perturb", content=json.dumps({"text": "word " * 200_000}),
                    headers={"content-type": "application/json"})
    assert r.status_code == 413 and "1.0 MB" in r.json()["error"] and "at most 256 KB" in r.json()["error"]
    for raw in (b"{not json", b'{"text": "\\ud800 lone"}', b"[1, 2]"):
        r = client.post("/api/perturb", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]


def test_page_and_assets_load_nothing_from_elsewhere(client):
    page = client.get("/")
    assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
    refs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert refs and all(r.startswith("/static/") or r == "data:," for r in refs)
    for ref in refs:
        if ref.startswith("/static/"):
            asset = client.get(ref)
            assert asset.status_code == 200 and not re.search(r"https?://(?!www\.w3\.org/2000/svg)", asset.text)
    assert client.get("/static/../app.py").status_code == 404


def test_the_command_binds_loopback_and_logs_no_text(tmp_path):
    code = ("import sys; from dptext.cli.playground import playground; "
            "playground(host='127.0.0.1', port=0, public=False)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, env=env)
    try:
        port, seen = None, []
        deadline = time.monotonic() + 120
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            port = int(m.group(1)) if m else None
        assert port, "".join(seen)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as c:
            assert c.post("/api/perturb", json={"text": f"{CANARY} met {CANARY}.", "seed": 1}).status_code == 200
            assert c.post("/api/perturb", json={"text": CANARY, "epsilon": 0}).status_code == 400
            assert c.post("/api/transition", json={"context": CANARY, "position": 9}).status_code == 400
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[1]
    assert CANARY not in "".join(seen) + out


def test_the_command_refuses_a_public_address_unless_asked(monkeypatch):
    from dptext.cli.playground import is_loopback, playground
    from dptext.errors import DPTextError

    from dptext.cli import playground as command

    served = []
    monkeypatch.setattr(command, "listen_socket", lambda host, port: None)  # never binds here
    monkeypatch.setattr(command, "run_uvicorn", lambda app, sock, **kw: served.append(kw["host"]))
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    with pytest.raises(DPTextError, match="--public"):
        playground(host="0.0.0.0", port=8090, public=False)
    assert served == []
    playground(host="0.0.0.0", port=8090, public=True)
    assert served == ["0.0.0.0"]


def test_dashboard_router_serves_page_assets_and_guarded_data():
    with serve_app(dashboard_app()) as url, httpx.Client(base_url=url) as c:
        page = c.get("/admin/dashboard")
        assert page.status_code == 200 and "dashboard/assets/dashboard.js" in page.text
        for ref in re.findall(r'(?:src|href)="(dashboard/[^"]+)"', page.text):
            assert c.get(f"/admin/{ref}").status_code == 200
        assert c.get("/admin/dashboard/data").status_code == 401
        data = c.get("/admin/dashboard/data", headers={"authorization": "Bearer secret"}).json()
        assert data == fake_snapshot()


def test_guide_serves_the_curves_measured_for_docs_choosing(client):
    """/api/guide carries docs/choosing.json's sweep rows at the balanced preset's rest ε and entity ε, with the
    accuracy of every classifier task (sentiment and topic) against its clean accuracy."""
    from dptext.privacy.presets import PRESETS

    doc = json.loads((ROOT / "docs" / "choosing.json").read_text(encoding="utf-8"))
    rows, bal = doc["rows"], PRESETS["balanced"]
    mech, eps, ent = bal.spec.mechanism, bal.spec.epsilon, bal.policy["entity_epsilon"]
    r = client.get("/api/guide")
    assert r.status_code == 200 and "default-src 'none'" in r.headers["content-security-policy"]
    guide = r.json()
    assert guide["guide"] == "docs/choosing.md in the dptext repository"
    assert set(guide["clean_accuracy"]) == {"sentiment", "topic"} and guide["clean_accuracy"] == doc["clean_accuracy"]
    by = {(c["mechanism"], c["policy"]): c for c in guide["curves"] if not c["params"]}
    cell = next(v for e, v in rows[mech]["rest"].items() if float(e) == eps)
    for policy, key in (("tiered", "content_retention"), ("all", "all_retention")):
        c = by[(mech, policy)]
        k = c["epsilon"].index(eps)
        assert c["retention"][k] == cell[key]
        assert c["all_knn"][k] == cell["all_units"]["knn_all"]
    tiered = by[(mech, "tiered")]
    for task in ("sentiment", "topic"):
        assert tiered["accuracy"][task][tiered["epsilon"].index(eps)] == cell["accuracy"][task]
        assert by[(mech, "all")]["accuracy"][task][0] is None  # measured under tiered only
    ecell = next(v for e, v in rows[mech]["entity"].items() if float(e) == ent)
    assert tiered["entity_bayes"][tiered["entity_epsilon"].index(ent)] == ecell["bayes"]
