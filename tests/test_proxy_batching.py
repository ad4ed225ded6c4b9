"""Batched perturbation: concurrent requests' mechanism calls merged, each request's result its own.

A real Sanitizer (RANTEXT, ε = 3) and real threads; the last test runs the
proxy on loopback with a recording upstream and concurrent raw-socket clients.
"""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from llama_server import recording_server, serve_app
from test_server_limits import AUTH, config

from dptext.errors import PrivacyError
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.spec import MechanismSpec
from dptext.pipeline import Sanitizer, Segment
from dptext.server import create_app
from dptext.server.batching import attach

WORDS = "nurse doctor river garden letter station morning winter coffee teacher".split()


def text_of(i: int) -> str:
    """Distinct texts of distinct lengths: request i has i + 3 words."""
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(i + 3))


@pytest.fixture(scope="module")
def spec():
    return MechanismSpec(mechanism="rantext", epsilon=3)


def units(sanitizer, text):
    return [p.text for p in sanitizer.mechanism.segment(text).pieces]


def run_together(sanitizer, combiner, texts, rng=lambda: None):
    """Every text sanitised in its own thread (generator ``rng()``), all queued before the first one runs."""
    out = [None] * len(texts)

    def one(i):
        try:
            out[i] = sanitizer.sanitize([Segment(texts[i], True)], rng=rng())
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out[i] = exc

    with combiner:  # hold the lock until every thread is queued for it
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while combiner.inside < len(texts) + 1:
            assert time.monotonic() < deadline, "threads did not queue"
            time.sleep(0.001)
    for t in threads:
        t.join(10)
    return out


def test_concurrent_requests_share_one_call_and_each_gets_its_own_result(spec):
    s = Sanitizer(spec)
    combiner = attach(s, shared_rng=True)
    texts = [text_of(i) for i in range(12)]
    out = run_together(s, combiner, texts)
    assert combiner.calls == 1 and combiner.texts == 12  # one perturb_many for the twelve requests
    for text, res in zip(texts, out):
        assert [u["original"] for u in res.units(0)] == units(s, text)  # routed back to its own request
        assert res.report["epsilon_spent"] == 3.0 and sum(res.report["units"].values()) == len(units(s, text))


def test_the_same_text_twice_in_one_batch_gets_two_independent_draws(spec):
    s = Sanitizer(spec)
    combiner = attach(s, shared_rng=True)
    text = " ".join(WORDS * 3)  # 30 units: two independent draws coincide with probability < 1e-20
    a, b = run_together(s, combiner, [text, text])
    assert combiner.calls == 1 and a.texts[0] != b.texts[0]


def test_one_failing_request_fails_alone(spec, monkeypatch):
    s = Sanitizer(spec)
    combiner = attach(s, shared_rng=True)
    real = Mechanism._perturb_pieces

    def fragile(self, pieces, rng, *args, **kwargs):  # a mechanism that cannot perturb the unit "poison"
        if any(p.text == "poison" for p in pieces):
            raise ValueError("cannot perturb this unit")
        return real(self, pieces, rng, *args, **kwargs)

    monkeypatch.setattr(Mechanism, "_perturb_pieces", fragile)
    texts = [text_of(0), "the poison letter", text_of(1), text_of(2)]
    out = run_together(s, combiner, texts)
    assert isinstance(out[1], PrivacyError) and "nothing was sent" in str(out[1])
    for i in (0, 2, 3):
        assert [u["original"] for u in out[i].units(0)] == units(s, texts[i])


def test_seeded_requests_are_batched_only_with_their_own_generator(spec):
    import numpy as np

    s = Sanitizer(spec)
    combiner = attach(s, shared_rng=False)
    texts = [text_of(i) for i in range(4)]
    alone = [s.sanitize([Segment(t, True)], rng=np.random.default_rng(5)).texts[0] for t in texts]
    out = run_together(s, combiner, texts, rng=lambda: np.random.default_rng(5))
    assert [o.texts[0] for o in out] == alone  # a seeded request's text does not depend on who ran beside it
    assert combiner.calls == 4 + 4  # one call per generator


def test_proxy_batches_concurrent_requests_and_charges_each():
    n = 16
    with recording_server(reply="Noted.") as rec:
        app = create_app(config(rec.url, privacy={"memo": {"enabled": False}}))
        with serve_app(app) as url:
            svc = app.state.services
            gate_holder = threading.Event()
            release = threading.Event()

            def hold():  # keep the Sanitizer busy so that the n requests queue up behind it
                with svc.perturber.sanitizer._lock:
                    gate_holder.set()
                    release.wait(10)

            def send(i):
                body = {"model": "x", "messages": [{"role": "user", "content": text_of(i)}]}
                return httpx.post(url + "/chat/completions", content=json.dumps(body), headers=AUTH,
                                  trust_env=False, timeout=60)

            assert send(0).status_code == 200  # first request: the scheduler attaches the combiner
            holder = threading.Thread(target=hold)
            holder.start()
            gate_holder.wait(10)
            combiner = svc.scheduler.combiner
            calls0 = combiner.calls
            with ThreadPoolExecutor(n) as ex:
                futures = [ex.submit(send, i) for i in range(1, n + 1)]
                deadline = time.monotonic() + 20
                while combiner.inside < n + 1 and time.monotonic() < deadline:
                    time.sleep(0.005)
                release.set()
                answers = [f.result() for f in futures]
            holder.join(10)
    assert all(r.status_code == 200 for r in answers)
    assert combiner.calls - calls0 < n // 2  # merged: far fewer mechanism calls than requests
    assert all(r.headers["x-dptext-epsilon-spent"] == "3" for r in answers)  # each request charged
    totals = sorted(float(r.headers["x-dptext-epsilon-total"]) for r in answers)
    assert totals == [3.0 * k for k in range(2, n + 2)]  # one charge per request, none lost or doubled
    for i, r in enumerate(answers, start=1):  # each report counts the units of its own request's text
        assert sum(r.json()["dptext"]["units"].values()) == len(units(svc.perturber.sanitizer, text_of(i)))
    sent = rec.chat_requests()[1:]
    assert len(sent) == n and all(text_of(i) not in json.dumps(sent) for i in range(1, n + 1))


def test_many_threads_with_several_segments_each_get_their_own_units(spec):
    """20 threads x 10 Sanitizer calls of 1-4 segments (some public): no hang, every unit record and
    public text back in its own place, and calls were merged."""
    import random

    s = Sanitizer(spec)
    combiner = attach(s, shared_rng=True)
    wrong = []

    def work(seed):
        r = random.Random(seed)
        for _ in range(10):
            segs = [Segment(" ".join(r.choice(WORDS) for _ in range(r.randint(1, 20))), r.random() < 0.8)
                    for _ in range(r.randint(1, 4))]
            out = s.sanitize(segs)
            for i, seg in enumerate(segs):
                got = [u["original"] for u in out.units(i)]
                if got != (units(s, seg.text) if seg.private else []) or (not seg.private and out.texts[i] != seg.text):
                    wrong.append(seg)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and wrong == []
    assert combiner.calls < combiner.texts


def test_detected_spans_are_batched_and_keep_their_dp_only_rule():
    """Under an entity policy every private span is perturbed with ``dp_only`` (no keep rule): those calls are
    merged too, and the merged call still applies the rule (SANTEXT+ keeps no frequent name inside a span)."""
    from dptext.privacy.policy import get_policy

    s = Sanitizer(MechanismSpec(mechanism="santext+", epsilon=2), policy=get_policy("entities"))
    combiner = attach(s, shared_rng=True)
    texts = [f"The patient {n} Smith was admitted on Monday." for n in ("John", "Mary", "Peter", "Anna")]
    out = run_together(s, combiner, texts)
    assert combiner.calls >= 1 and combiner.texts >= len(texts)  # spans went through the combiner
    for res in out:
        spans = res.report["spans"]
        assert spans and all(sp["kept_by_rule"] == 0 for sp in spans), spans
