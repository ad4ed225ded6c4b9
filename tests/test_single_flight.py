"""Single-flight: concurrent copies of one private text get one perturbation and one charge.

The proxy runs under uvicorn on loopback behind a recording upstream; the
copies are sent at once from threads (a barrier releases them together), and
the upstream's bodies are counted. Without single-flight (main before issue
27) 10 copies gave 3-6 distinct perturbations, each one charged.
"""

import socket
import threading
import time
from urllib.parse import urlparse

import httpx
import pytest
from llama_server import recording_server, serve_app
from test_server_repeats import KEY, WORDS, config

from dptext.privacy.flight import Flights, StateError
from dptext.privacy.memo import Memo
from dptext.server import create_app


def post_at_once(urls: str | list[str], bodies: list[dict], timeout: float = 60) -> list[httpx.Response]:
    """Every body at once (a barrier releases the threads), request i to ``urls[i % len(urls)]``."""
    urls = [urls] if isinstance(urls, str) else urls
    out: list = [None] * len(bodies)
    go = threading.Barrier(len(bodies))

    def one(i: int) -> None:
        with httpx.Client(trust_env=False, timeout=timeout) as c:
            go.wait()
            out[i] = c.post(urls[i % len(urls)] + "/chat/completions", json=bodies[i],
                            headers={"authorization": f"Bearer {KEY}"})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def slow_ledger(app, delay: float = 0.05) -> None:
    """Each charge takes ``delay`` longer (as with a remote database): a wide window between a request's
    perturbation and its memo write, in which concurrent copies would otherwise miss the memo."""
    acc = app.state.services.accountant
    charge = acc.charge

    def slow(key, epsilon):
        time.sleep(delay)
        return charge(key, epsilon)

    acc.charge = slow


def chat(text: str) -> dict:
    return {"model": "x", "messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("concurrency", [1, 4])
def test_ten_concurrent_copies_give_one_perturbation_charged_once(tmp_path, concurrency):
    text = " ".join(WORDS[:40])
    with recording_server(reply="Noted.") as rec:
        cfg = config(rec.url, str(tmp_path), limits={"perturb_concurrency": concurrency})
        app = create_app(cfg)
        slow_ledger(app)
        with serve_app(app) as url:
            resps = post_at_once(url, [chat(text)] * 10)
            assert [r.status_code for r in resps] == [200] * 10
            sent = [q["messages"][0]["content"] for q in rec.chat_requests()]
            assert len(sent) == 10 and len(set(sent)) == 1
            assert sent[0] != text
            spent = sorted(float(r.headers["x-dptext-epsilon-spent"]) for r in resps)
            assert spent == [0.0] * 9 + [3.0]
            assert max(float(r.headers["x-dptext-epsilon-total"]) for r in resps) == 3.0
            # different texts are not serialised into one: each gets its own perturbation and charge
            resps = post_at_once(url, [chat(" ".join(WORDS[i:i + 30])) for i in range(1, 6)])
            assert all(float(r.headers["x-dptext-epsilon-spent"]) == 3.0 for r in resps)


def test_a_refused_owner_hands_the_text_to_a_waiter(tmp_path):
    """The owner's claim ends without a result (e.g. over budget): the waiter claims and perturbs itself."""
    memo = Memo(tmp_path / "m.sqlite", b"k" * 32)
    flights = memo.flights
    k = memo.key("alice", {}, "text")
    hits, mine = flights.acquire([k])
    assert (hits, mine) == ({}, [k])
    got = {}

    def waiter():
        got["first"] = flights.acquire([k])
        flights.release({k: "perturbed"}, got["first"][1])

    t = threading.Thread(target=waiter)
    t.start()
    t.join(0.3)
    assert t.is_alive(), "the waiter did not wait for the owner's claim"
    flights.release({}, mine)  # owner refused: nothing stored
    t.join(5)
    assert got["first"] == ({}, [k])
    assert flights.acquire([k]) == ({k: "perturbed"}, [])  # the waiter's perturbation is now replayed


def test_a_busy_store_claim_times_out_as_a_state_error():
    class Busy:
        def claim(self, key):
            return "busy", None

        def finish(self, done, dropped):
            pass

    with pytest.raises(StateError, match="another replica"):
        Flights(Busy(), wait_s=0.1).acquire([b"k"])


def test_an_abandoned_attempt_is_not_forwarded(tmp_path):
    """A client that hangs up while its request waits for the perturbation slot: nothing goes upstream for it."""
    heavy = " ".join(WORDS * 40)
    with recording_server(reply="Noted.") as rec:
        with serve_app(create_app(config(rec.url, str(tmp_path), limits={"max_units": 50_000}))) as url:
            u = urlparse(url)
            box = {}
            t = threading.Thread(target=lambda: box.setdefault("r", post_at_once(url, [chat(heavy)])))
            t.start()
            threading.Event().wait(0.3)  # the heavy request is perturbing: the next one queues behind a chunk
            body = httpx.Request("POST", "http://x/", json=chat("my secret diagnosis is flu")).content
            head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {u.netloc}\r\nAuthorization: Bearer {KEY}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
            with socket.create_connection((u.hostname, u.port)) as s:
                s.sendall(head + body)
                s.shutdown(socket.SHUT_RDWR)
            t.join(60)
            assert box["r"][0].status_code == 200
            # the abandoned request finishes perturbing after the heavy one; give it time to (not) forward
            for _ in range(50):
                if len(rec.chat_requests()) > 1:
                    break
                threading.Event().wait(0.05)
            assert len(rec.chat_requests()) == 1
