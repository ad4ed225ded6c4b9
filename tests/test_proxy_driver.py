"""The perturbation process's batch driver (dptext.server.driver), run in this process on a real core and state.

The requests of a batch share one mechanism call and each gets its own result,
report and charge; a twin of a text being perturbed waits and replays it; a
failing text fails its own request only; the ledger stays exact. The driver in
the real child process is exercised by tests/test_proxy_process.py.
"""

import json
import sqlite3
import threading

import pytest
from test_server_repeats import KEY, WORDS, config

from dptext.privacy.flight import Flights
from dptext.server.driver import BatchDriver
from dptext.server.privacy import Perturber
from dptext.server.request import decode_body, parse_request
from dptext.server.scheduler import ungated
from dptext.server.state import open_state
from dptext.server.worker import perturb_and_charge


def text_of(i: int) -> str:
    """Distinct texts of distinct lengths: request i has i + 3 words."""
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(i + 3))


class Rig:
    """A Perturber on a SQLite memo and ledger, a driver, and the replies it sent."""

    def __init__(self, tmp_path, **over) -> None:
        from dptext.server import hash_key

        keys = {"keys": [{"id": "alice", "sha256": hash_key(KEY), "epsilon_budget": over.pop("budget", None)}]}
        self.cfg = config("http://127.0.0.1:9/v1", str(tmp_path), auth=keys, **over)
        self.memo, self.accountant = open_state(self.cfg, None, build_memo=True)
        self.perturber = Perturber(self.cfg, memo=self.memo)
        self.replies: dict[int, tuple] = {}
        self.deferred: list[tuple] = []
        self.driver = BatchDriver(self.perturber, self.accountant, self.reply, self.deferred.append)

    def reply(self, rid, *got):
        assert rid not in self.replies, "two replies for one request"
        self.replies[rid] = got

    def request(self, text: str, copies: int = 1):
        body = json.dumps({"model": "up", "messages": [{"role": "user", "content": text}] * copies}).encode()
        return parse_request(decode_body(body), self.cfg)

    def run(self, texts: list[str]) -> None:
        self.driver.run([(i, self.request(t), "alice", 0.0) for i, t in enumerate(texts)])

    def close(self) -> None:
        self.memo.close()
        self.accountant.close()


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    yield r
    r.close()


def n_units(rig, text: str) -> int:
    return len(rig.perturber.mech.segment(text).pieces)


def test_a_batch_shares_one_mechanism_call_and_each_request_gets_its_own_result(rig):
    texts = [text_of(i) for i in range(12)]
    rig.run(texts)
    assert rig.driver.calls == 1 and not rig.deferred
    assert sorted(rig.replies) == list(range(12))
    for i, text in enumerate(texts):
        perturbed, charge, timing = rig.replies[i]
        assert sum(perturbed.report["units"].values()) == n_units(rig, text)  # its own text's units, not another's
        assert perturbed.messages[0]["content"] != text and charge.epsilon == 3.0
        assert timing["perturb"] >= 0 and timing["queue"] >= 0
    assert rig.accountant.total("alice") == 36.0
    assert len(rig.memo) == 12  # each committed after its charge


def test_a_twin_in_the_same_batch_waits_for_the_first_and_replays_it(rig):
    text = text_of(20)
    rig.run([text, text_of(1), text])
    assert sorted(rig.replies) == [0, 1] and [m[0] for m in rig.deferred] == [2]
    first = rig.replies[0][0].messages[0]["content"]
    (rid, req, key, submitted), = rig.deferred
    perturbed, charge = perturb_and_charge(rig.perturber, rig.accountant, ungated, req, key, {}, submitted)
    assert perturbed.messages[0]["content"] == first and charge.epsilon == 0.0  # a replay: no second draw, no ε
    assert rig.memo.flights.claims == 2  # the two distinct texts, once each
    assert rig.accountant.total("alice") == 6.0


def test_a_twin_waiting_in_another_thread_is_served_after_the_batch_commits(rig):
    text = text_of(15)
    staged = rig.memo.staged()
    staged.acquire([staged.key("alice", rig.perturber.sanitizer.settings, text)])  # another request holds it
    rig.run([text])
    assert not rig.replies and len(rig.deferred) == 1  # the driver did not wait while holding the batch
    staged.abort()
    assert not rig.memo.flights.owners  # nothing left claimed by the driver


def test_one_failing_text_fails_its_own_request_only(rig, monkeypatch):
    mech = rig.perturber.mech
    original = type(mech).perturb_many

    def perturb_many(self, texts, **kw):
        if any("poison" in t for t in texts):
            raise RuntimeError("boom")
        return original(self, texts, **kw)

    monkeypatch.setattr(type(mech), "perturb_many", perturb_many)
    rig.run([text_of(3), text_of(4) + " poison", text_of(5)])
    assert len(rig.replies[0]) == 3 and len(rig.replies[2]) == 3
    (err,) = rig.replies[1]
    assert "nothing was sent" in str(err)
    assert rig.accountant.total("alice") == 6.0 and len(rig.memo) == 2
    assert not rig.memo.flights.owners  # the failed request's claim is gone: its text can be tried again


def test_the_budget_holds_inside_a_batch(tmp_path):
    rig = Rig(tmp_path, budget=7)
    try:
        rig.run([text_of(i) for i in range(4)])
        ok = [r for r in rig.replies.values() if len(r) == 3]
        refused = [r[0] for r in rig.replies.values() if len(r) == 1]
        assert len(ok) == 2 and len(refused) == 2 and all(e.status == 429 for e in refused)
        assert rig.accountant.total("alice") == 6.0 and len(rig.memo) == 2  # refused: nothing stored
    finally:
        rig.close()


def test_a_later_batch_replays_a_stored_text_without_a_charge(rig):
    rig.run([text_of(7), text_of(8)])
    first = {i: rig.replies[i][0].messages[0]["content"] for i in (0, 1)}
    rig.replies.clear()
    rig.run([text_of(8), text_of(9)])
    (replayed, charge, _), (fresh, charge2, _) = rig.replies[0], rig.replies[1]
    assert replayed.messages[0]["content"] == first[1] and charge.epsilon == 0.0
    assert replayed.report["memo_hits"] == 1 and charge2.epsilon == 3.0
    assert rig.accountant.total("alice") == 9.0


def test_a_text_repeated_inside_one_request_is_drawn_once(rig):
    text = text_of(25)
    rig.driver.run([(0, rig.request(text, copies=3), "alice", 0.0)])
    perturbed, charge, _ = rig.replies[0]
    sent = [m["content"] for m in perturbed.messages]
    assert len(sent) == 3 and len(set(sent)) == 1 and sent[0] != text  # one draw, not three votes
    assert perturbed.report["memo_hits"] == 2 and charge.epsilon == 3.0


class BusyStore:
    """A store whose key ``z`` (claimed last: keys go in sorted order) another replica is perturbing."""

    def __init__(self):
        self.claimed = []

    def claim(self, key):
        if key == b"z":
            return "busy", None
        self.claimed.append(key)
        return "mine", None

    def finish(self, done, dropped):
        self.claimed = [k for k in self.claimed if k not in dropped]


def test_acquire_without_waiting_holds_nothing_when_one_key_is_busy_anywhere():
    flights = Flights(BusyStore())
    assert flights.acquire([b"z", b"b"], wait=False) is None  # b, claimed first, is given back:
    assert not flights.owners and not flights.store.claimed
    assert flights.acquire([b"b", b"c"], wait=False) == ({}, [b"b", b"c"])
    assert flights.acquire([b"c"], wait=False) is None  # held in this process
    ev = threading.Event()
    flights.owners[b"d"] = ev
    assert flights.acquire([b"d"], wait=False) is None and flights.owners[b"d"] is ev


def test_memo_keys_are_the_hmac_of_the_canonical_json_of_scope_settings_and_text(rig):
    import hashlib
    import hmac

    settings = {"mechanism": "rantext", "epsilon": 3.0, "z": [1, "é"], "a": None}
    for scope, text in (("alice", "Grüße, Zoë"), ("bob", 'a "quoted" \\ text\n'), ("alice", "\ud800 lone")):
        msg = json.dumps([scope, settings, text], sort_keys=True, ensure_ascii=False, default=str,
                         separators=(",", ":")).encode("utf-8", "surrogatepass")
        assert rig.memo.key(scope, settings, text) == hmac.new(rig.memo.secret, msg, hashlib.sha256).digest()
    other = {**settings, "epsilon": 4.0}  # another settings object: its own JSON, not the cached one
    assert rig.memo.key("alice", other, "x") != rig.memo.key("alice", settings, "x")


class FailingCommit:
    """A sqlite3 connection whose COMMIT fails (a full disk, say); everything else goes through."""

    def __init__(self, db):
        self.db = db

    def execute(self, sql, *args):
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


@pytest.mark.parametrize("store", ["ledger", "memo"])
def test_a_failed_batch_commit_fails_every_request_of_the_batch(rig, store):
    owner = rig.accountant if store == "ledger" else rig.memo
    real = owner.db
    owner.db = FailingCommit(real)
    rig.run([text_of(i) for i in range(4)])
    owner.db = real
    assert sorted(rig.replies) == [0, 1, 2, 3]
    assert all(len(r) == 1 and "write failed" in str(r[0]) for r in rig.replies.values())  # no reply is "ok"
    assert len(rig.memo) == 0  # nothing stored that could be replayed without its charge
    assert not rig.memo.flights.owners
