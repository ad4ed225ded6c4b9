"""``limits.perturb_process: true``: perturbation, memo and ε ledger in one child process.

The proxy runs under uvicorn on loopback behind a recording upstream, as in
test_single_flight; the child process is real (spawned). What must hold as in
one process: one perturbation per text under concurrency, an exact ε ledger
(written by the child, in the state directory), fail closed when the child is
gone, and start-up problems as one line.
"""

import os
import signal
import time

import pytest
from llama_server import recording_server, serve_app
from test_server_repeats import KEY, WORDS, config
from test_single_flight import chat, post_at_once

from dptext.errors import DPTextError
from dptext.privacy.accounting import Accountant
from dptext.server import create_app, hash_key

PROCESS = {"perturb_process": True, "requests_per_minute": 1e6, "burst": 10**6}


def test_one_perturbation_per_text_and_an_exact_ledger_across_the_process_boundary(tmp_path):
    text = " ".join(WORDS[:40])
    keys = {"keys": [{"id": "alice", "sha256": hash_key(KEY), "epsilon_budget": 15}]}
    with recording_server(reply="Noted.") as rec:
        app = create_app(config(rec.url, str(tmp_path), limits=PROCESS, auth=keys))
        svc = app.state.services
        assert svc.accountant is None and svc.memo is None  # the server process opens no state
        assert svc.scheduler.remote.proc.pid != os.getpid()
        with serve_app(app) as url:
            resps = post_at_once(url, [chat(text)] * 10)
            assert [r.status_code for r in resps] == [200] * 10
            sent = [q["messages"][0]["content"] for q in rec.chat_requests()]
            assert len(sent) == 10 and len(set(sent)) == 1 and sent[0] != text
            assert sorted(float(r.headers["x-dptext-epsilon-spent"]) for r in resps) == [0.0] * 9 + [3.0]
            # 6 different texts at once against the 12 left: exactly 4 charged, 2 refused before upstream
            resps = post_at_once(url, [chat(" ".join(WORDS[i:i + 30])) for i in range(1, 7)])
            assert sorted(r.status_code for r in resps) == [200] * 4 + [429] * 2
            assert all(r.json()["error"]["code"] == "privacy_budget_exceeded" for r in resps if r.status_code == 429)
            assert len(rec.chat_requests()) == 14
            t = time.monotonic()
        # shutdown asks the child to stop: it exits by itself (not killed after a timeout), ledger closed
        assert time.monotonic() - t < 8 and svc.scheduler.remote.proc.exitcode == 0
    acc = Accountant(tmp_path / "accounting.sqlite")  # the child's ledger, on disk, after shutdown
    try:
        assert acc.total("alice") == 15.0
    finally:
        acc.close()


def test_a_dead_perturbation_process_fails_closed(tmp_path):
    with recording_server(reply="Noted.") as rec:
        app = create_app(config(rec.url, str(tmp_path), limits=PROCESS))
        remote = app.state.services.scheduler.remote
        with serve_app(app) as url:
            assert post_at_once(url, [chat(" ".join(WORDS[:20]))])[0].status_code == 200
            os.kill(remote.proc.pid, signal.SIGKILL)
            remote.proc.join(10)
            deadline = time.monotonic() + 10
            while not remote.dead and time.monotonic() < deadline:  # the reader thread sees the pipe close
                time.sleep(0.01)
            for r in post_at_once(url, [chat(" ".join(WORDS[5:25]))] * 3):
                assert r.status_code == 503 and r.json()["error"]["code"] == "state_unavailable"
            assert len(rec.chat_requests()) == 1  # nothing after the child died went upstream


def test_start_up_problems_are_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(DPTextError) as err:  # reported by the child, raised in the server process
        create_app(config("http://127.0.0.1:9/v1", str(blocker / "state"), limits=PROCESS))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("the perturbation process could not start: config state: ")
    with pytest.raises(DPTextError, match="dashboard"):
        create_app(config("http://127.0.0.1:9/v1", str(tmp_path), limits=PROCESS, dashboard=True))
