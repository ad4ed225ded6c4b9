"""Repeats do not add up: consistent perturbation (memo) and per-key ε accounting, through the real proxy.

The proxy runs under uvicorn on loopback, the client is the openai SDK, and a
recording upstream keeps what left the proxy. The attack is the one a remote
provider can run on resent chat histories: vote position by position over the
copies of one private turn it received.
"""

import os
import tempfile
from collections import Counter
from contextlib import contextmanager

import openai
import pytest
from llama_server import recording_server, serve_app

from dptext.server import config_from_dict, create_app, hash_key
from dptext.server.config import ServerConfig

KEY = "sk-repeats-test"
WORDS = ("the patient said that her mother and father live near the river in a small house with two dogs and "
         "a cat she works at the bank every day from nine until five and her brother drives a bus in the city "
         "she has high blood pressure and takes pills each morning before breakfast with a glass of water "
         "last year she was in hospital for three weeks after a bad fall on the ice near her home").split()


def config(upstream: str, state_dir: str | None = None, **over) -> ServerConfig:
    data = {"upstream": {"base_url": upstream, "model": "up", "retries": 0, "timeout_s": 30},
            "privacy": {"mechanism": "rantext", "epsilon": 3},
            "auth": {"keys": [{"id": "alice", "sha256": hash_key(KEY)}]},
            "limits": {"requests_per_minute": 1e6, "burst": 10**6}}
    if "state_dir" in ServerConfig.model_fields and "state" not in over:  # state: postgresql://... instead
        data["state_dir"] = state_dir or tempfile.mkdtemp(prefix="dptext-repeats-")
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v} if isinstance(v, dict) else v
    return config_from_dict(data)


@contextmanager
def proxy(state_dir=None, reply="Noted.", status=None, **over):
    with recording_server(reply=reply, status=status) as rec:
        with serve_app(create_app(config(rec.url, state_dir, **over))) as url:
            yield url, rec


def client(url, retries=0):
    return openai.OpenAI(base_url=url, api_key=KEY, max_retries=retries, timeout=60)


def single_unit_words(words):
    """Words the space segments as one unit each, so that copies align position by position."""
    from dptext.mechanisms import get_mechanism

    mech = get_mechanism("rantext", epsilon=3)
    return [w for w in words if len(mech.segment(w).pieces) == 1 and mech.space.lookup(w) >= 0]


def vote_recovery(original: list[str], copies: list[str]) -> float:
    """Fraction of positions where the most frequent word over the copies is the original word."""
    rows = [c.lower().split() for c in copies]
    rows = [r for r in rows if len(r) == len(original)]
    assert len(rows) >= 0.8 * len(copies), "copies do not align with the original"
    votes = [Counter(col).most_common(1)[0][0] for col in zip(*rows)]
    return sum(v == o.lower() for v, o in zip(votes, original)) / len(original)


def resend_history(url, rec, text: str, turns: int) -> list[str]:
    """A chat client resending the whole history each turn; returns the copies of turn 1 the upstream got."""
    c = client(url)
    history = [{"role": "user", "content": text}]
    for t in range(turns):
        c.chat.completions.create(model="x", messages=history)
        history += [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": f"Tell me more {t}"}]
    return [r["messages"][0]["content"] for r in rec.chat_requests()[-turns:]]


def test_voting_attack_over_resent_history(capsys):
    words = single_unit_words(WORDS)
    assert len(words) >= 60
    text = " ".join(words)
    figures = {}
    # InferDPT's published noise constants: the setting in which a copy keeps ~15 % of its units, so that voting
    # over fresh copies has something to gain (the space-calibrated default keeps far fewer)
    for memo in (False, True):  # one 20-turn conversation each; the attacker votes over its first k copies
        with proxy(privacy={"memo": {"enabled": memo}, "options": {"noise": "paper"}}) as (url, rec):
            copies = resend_history(url, rec, text, 20)
        for k in (1, 8, 20):
            figures[memo, k] = vote_recovery(words, copies[:k])
    with capsys.disabled():
        print("\nvoting recovery of %d units (1 / 8 / 20 copies): without memo %s, with memo %s" % (
            len(words), [round(figures[False, k], 3) for k in (1, 8, 20)],
            [round(figures[True, k], 3) for k in (1, 8, 20)]))
    # without the memo the copies are fresh draws and voting gains (here ~0.15 -> ~0.45, sd of the gap ~0.07)
    assert figures[False, 20] > figures[False, 1] + 0.1
    # with it every copy is the first draw: 20 resends recover no more than one
    assert figures[True, 20] <= figures[True, 1] and figures[True, 8] <= figures[True, 1]
    assert len(set(copies)) == 1


def test_sdk_retries_resend_one_perturbation():
    text = " ".join(WORDS)
    with proxy(status=500) as (url, rec):
        with pytest.raises(openai.InternalServerError):
            client(url, retries=2).chat.completions.create(model="x", messages=[{"role": "user", "content": text}])
    copies = [r["messages"][0]["content"] for r in rec.chat_requests()]
    assert len(copies) == 3 and len(set(copies)) == 1 and copies[0] != text


def test_epsilon_accounting_headers_and_budget():
    first, second = "my sister Anna lives in Berlin", "my brother Tom works in Paris now"
    # ε = 3 per unit, so a request with fresh units spends 3: one fits a budget of 5, a second new one does not
    with proxy(privacy={"budget": {"epsilon": 5, "window_s": 3600}}) as (url, rec):
        c = client(url)
        raw = c.chat.completions.with_raw_response.create(model="x", messages=[{"role": "user", "content": first}])
        report = raw.parse().model_extra["dptext"]
        spent = float(raw.headers["x-dptext-epsilon-spent"])
        assert spent == report["epsilon_spent"] == 3.0 and report["units"]["perturbed"] > 0
        assert float(raw.headers["x-dptext-epsilon-total"]) == spent == report["epsilon_total"]
        again = c.chat.completions.with_raw_response.create(model="x", messages=[{"role": "user", "content": first}])
        assert again.headers["x-dptext-epsilon-spent"] == "0" and float(again.headers["x-dptext-epsilon-total"]) == spent
        assert again.parse().model_extra["dptext"]["memo_hits"] == 1
        with pytest.raises(openai.RateLimitError) as e:
            c.chat.completions.create(model="x", messages=[{"role": "user", "content": second}])
        assert e.value.body["code"] == "privacy_budget_exceeded" and "privacy budget of key 'alice'" in e.value.message
        assert 1 <= int(e.value.response.headers["retry-after"]) <= 3600
        assert len(rec.chat_requests()) == 2  # the refused request never went upstream
        # a replay of what was already released stays free, even at the budget
        c.chat.completions.create(model="x", messages=[{"role": "user", "content": first}])
        assert len(rec.chat_requests()) == 3


def test_memo_and_accounting_survive_a_restart_and_hold_no_raw_text():
    text = "Margaret Thompson from Leeds has severe diabetes"
    state = tempfile.mkdtemp(prefix="dptext-restart-")
    outs, totals = [], []
    for _ in range(2):
        with proxy(state) as (url, rec):
            raw = client(url).chat.completions.with_raw_response.create(
                model="x", messages=[{"role": "user", "content": text}])
            outs.append(rec.chat_requests()[0]["messages"][0]["content"])
            totals.append(float(raw.headers["x-dptext-epsilon-total"]))
            hits = raw.parse().model_extra["dptext"]["memo_hits"]
    assert outs[0] == outs[1] != text and hits == 1 and totals[0] == totals[1] > 0
    assert os.stat(os.path.join(state, "memo.secret")).st_mode & 0o777 == 0o600
    blob = b"".join(open(os.path.join(state, f), "rb").read() for f in os.listdir(state))
    assert text.encode() not in blob and outs[0].encode() in blob  # keyed by HMAC; only what was sent is stored
    for word in ("Margaret", "Thompson", "Leeds", "diabetes"):
        assert word.encode() not in blob or word in outs[0]  # a unit the mechanism kept is in the sent text


def test_memo_bounds_in_size_and_age(tmp_path):
    from dptext.privacy.memo import Memo

    now = [1000.0]
    memo = Memo(tmp_path / "m.sqlite", b"k" * 32, max_entries=50, max_age_s=60, clock=lambda: now[0])
    keys = [memo.key("alice", {"m": 1}, f"text {i}") for i in range(300)]
    assert len(set(keys)) == 300 and memo.key("bob", {"m": 1}, "text 0") != keys[0]  # scope is part of the key
    for i, k in enumerate(keys):
        now[0] += 0.01
        memo.put(k, f"out {i}")
    memo.prune()
    assert len(memo) == 50 and memo.get(keys[0]) is None and memo.get(keys[-1]) == "out 299"
    memo.put(keys[-1], "a second draw")  # the first release stays
    assert memo.get(keys[-1]) == "out 299"
    now[0] += 61
    assert memo.get(keys[-1]) is None  # past max_age_s: never returned
    memo.prune()
    assert len(memo) == 0


def test_accountant_window_and_composition():
    from dptext.privacy.accounting import Accountant, BudgetExceeded

    now = [0.0]
    acc = Accountant(None, window_s=100, default_budget=10, clock=lambda: now[0])
    assert acc.charge("a", 4).total == 4
    now[0] = 50
    assert acc.charge("a", 6).window == 10
    with pytest.raises(BudgetExceeded) as e:
        acc.charge("a", 1)
    assert e.value.retry_after == pytest.approx(50)  # the first 4 leave the window at t = 100
    assert acc.charge("a", 0).total == 10  # replays are free
    now[0] = 100.5
    c = acc.charge("a", 4)
    assert c.window == 10 and c.total == 14  # window sum vs all-time basic composition


def test_developer_is_private_with_system_and_user_in_clear_only_on_purpose():
    from dptext.errors import DPTextError

    cfg = config("http://127.0.0.1:9/v1", privacy={"private_roles": ["user", "system"]})
    assert set(cfg.privacy.private_roles) == {"user", "system", "developer"}
    for roles in (["system"], ["developer"], ["assistant"]):
        with pytest.raises(DPTextError, match=r"privacy.*leaves user messages in clear.*allow_public_user"):
            config("http://127.0.0.1:9/v1", privacy={"private_roles": roles})
    assert "user" not in config("http://127.0.0.1:9/v1", privacy={"private_roles": ["system"],
                                                                    "allow_public_user": True}).privacy.private_roles
    secret = "the launch code is swordfish and the vault is in geneva"
    with proxy(privacy={"private_roles": ["user", "system"]}) as (url, rec):
        client(url).chat.completions.create(model="x", messages=[{"role": "developer", "content": secret},
                                                                  {"role": "user", "content": "hello there"}])
    sent = rec.chat_requests()[0]["messages"][0]["content"]
    assert sent != secret and "swordfish" not in sent


def test_unusable_state_directory_is_one_start_up_line(tmp_path):
    from dptext.errors import DPTextError
    from dptext.server import create_app

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(DPTextError, match=r"^config state: cannot use the state directory .*a-file/state: "):
        create_app(config("http://127.0.0.1:9/v1", str(blocker / "state")))


def test_a_full_state_store_fails_closed_with_a_state_error(tmp_path):
    """SQLite reports a full disk as SQLITE_FULL; ``max_page_count`` caps the file so the next write gets it."""
    import httpx

    from dptext.server import create_app

    with recording_server(reply="Noted.") as rec:
        app = create_app(config(rec.url, str(tmp_path)))
        svc = app.state.services
        with serve_app(app) as url:
            for db in (svc.memo.db, svc.accountant.db):
                (pages,) = db.execute("PRAGMA page_count").fetchone()
                db.execute(f"PRAGMA max_page_count = {pages}")
            r = httpx.post(url + "/chat/completions", headers={"authorization": f"Bearer {KEY}"}, timeout=60,
                           json={"model": "x", "messages": [{"role": "user", "content": " ".join(WORDS * 30)}]})
    assert r.status_code == 503 and r.json()["error"]["code"] == "state_unavailable"
    assert "state store" in r.json()["error"]["message"] and rec.chat_requests() == []
