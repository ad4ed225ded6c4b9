"""Two proxy replicas sharing one PostgreSQL state: one ledger, one memo, one perturbation per text.

A real PostgreSQL server (Debian's, started by :mod:`pg_server`) on loopback,
two proxies under uvicorn (or one as ``dptext serve`` in a subprocess, for
``kill -9``), a recording upstream counting what left them.

Each budget-test request costs exactly 1 ε: RANTEXT at ε = 1 and a distinct
private user turn of real words, so every request perturbs fresh units and
the proxy charges the largest unit ε freshly spent, 1.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from llama_server import free_port, recording_server, serve_app, stop_process
from pg_server import pg_url, postgres  # noqa: F401 - fixtures
from test_server_repeats import KEY, WORDS, config
from test_single_flight import chat, post_at_once, slow_ledger

from dptext.errors import DPTextError
from dptext.server import create_app, hash_key

SECRET = "a-shared-memo-secret-of-32-bytes"


def pg_config(upstream: str, url: str, **over):
    over.setdefault("privacy", {})
    over["privacy"] = {"epsilon": 1, "memo": {"secret": SECRET}, **over["privacy"]}
    return config(upstream, None, state=url, **over)


def total_spent(postgres, url: str) -> float:
    rows = postgres.sql(url, "SELECT total FROM dptext_totals WHERE key = 'alice'")
    return rows[0][0] if rows else 0.0


def two_replicas(rec, url, **over):
    apps = [create_app(pg_config(rec.url, url, **over)) for _ in range(2)]
    for app in apps:
        slow_ledger(app, 0.01)  # a little more overlap between the replicas' transactions
    return serve_app(apps[0]), serve_app(apps[1])


def test_budget_of_30_holds_over_40_concurrent_requests_on_two_replicas(postgres, pg_url):
    texts = [" ".join(WORDS[i:i + 12]) for i in range(40)]
    assert len(set(texts)) == 40
    with recording_server(reply="Noted.") as rec:
        a, b = two_replicas(rec, pg_url, privacy={"budget": {"epsilon": 30}},
                            limits={"perturb_concurrency": 4})
        with a as url_a, b as url_b:
            resps = post_at_once([url_a, url_b], [chat(t) for t in texts], timeout=120)
    codes = [r.status_code for r in resps]
    assert codes.count(200) == 30 and codes.count(429) == 10, codes
    assert {r.json()["error"]["code"] for r in resps if r.status_code == 429} == {"privacy_budget_exceeded"}
    assert all(float(r.headers["x-dptext-epsilon-spent"]) == 1.0 for r in resps if r.status_code == 200)
    assert total_spent(postgres, pg_url) == 30.0
    assert len(rec.chat_requests()) == 30
    per_replica = [[r.status_code for r in resps[i::2]] for i in range(2)]
    assert all(200 in codes_i for codes_i in per_replica)


def test_replicas_with_perturbation_processes_share_the_budget_and_the_memo(postgres, pg_url):
    """limits.perturb_process: the children (one per replica) hold the state; the same guarantees hold."""
    texts = [" ".join(WORDS[i:i + 12]) for i in range(40)]
    limits = {"perturb_process": True, "perturb_concurrency": 4}
    with recording_server(reply="Noted.") as rec:
        apps = [create_app(pg_config(rec.url, pg_url, privacy={"budget": {"epsilon": 30}}, limits=limits))
                for _ in range(2)]
        with serve_app(apps[0]) as url_a, serve_app(apps[1]) as url_b:
            resps = post_at_once([url_a, url_b], [chat(t) for t in texts], timeout=120)
            codes = [r.status_code for r in resps]
            assert codes.count(200) == 30 and codes.count(429) == 10, codes
            assert total_spent(postgres, pg_url) == 30.0 and len(rec.chat_requests()) == 30
            again = post_at_once([url_b, url_a], [chat(texts[codes.index(200)])] * 4, timeout=120)
            assert [r.status_code for r in again] == [200] * 4  # a memo replay: free, within the spent budget
            sent = [q["messages"][0]["content"] for q in rec.chat_requests()]
            assert len(set(sent[30:])) == 1 and sent[30] in sent[:30]


def test_identical_text_on_both_replicas_gives_one_perturbation(postgres, pg_url):
    text = " ".join(WORDS[:30])
    with recording_server(reply="Noted.") as rec:
        a, b = two_replicas(rec, pg_url)
        with a as url_a, b as url_b:
            resps = post_at_once([url_a, url_b], [chat(text)] * 10, timeout=120)
            assert [r.status_code for r in resps] == [200] * 10
            sent = {q["messages"][0]["content"] for q in rec.chat_requests()}
            assert len(sent) == 1 and text not in sent
            assert total_spent(postgres, pg_url) == 1.0
            # later copies on either replica replay it too
            again = post_at_once([url_b, url_a], [chat(text)] * 2, timeout=120)
            assert {q["messages"][0]["content"] for q in rec.chat_requests()} == sent
            assert [float(r.headers["x-dptext-epsilon-spent"]) for r in again] == [0.0, 0.0]
    rows = postgres.sql(pg_url, "SELECT k, text FROM dptext_memo")
    assert len(rows) == 1 and len(bytes(rows[0][0])) == 32 and rows[0][1] in sent  # HMAC key, perturbed text
    for word in ("patient", "mother", "river"):  # nothing raw stored
        assert not any(word in str(r) for r in postgres.sql(pg_url, "SELECT * FROM dptext_memo")
                       if word not in rows[0][1])


def test_kill_9_of_a_replica_loses_no_charge(postgres, pg_url, tmp_path):
    import yaml

    port = free_port()
    with recording_server(reply="Noted.", delay=60) as rec:
        cfg = {"upstream": {"base_url": rec.url, "model": "up", "retries": 0, "timeout_s": 120},
               "privacy": {"mechanism": "rantext", "epsilon": 1, "memo": {"secret": SECRET}},
               "auth": {"keys": [{"id": "alice", "sha256": hash_key(KEY)}]}, "state": pg_url,
               "listen": {"host": "127.0.0.1", "port": port}}
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(cfg))
        proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "serve", "-c", str(path)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                try:
                    if httpx.get(base + "/healthz", timeout=1, trust_env=False).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "replica did not start"
                time.sleep(0.1)
            t = threading.Thread(target=lambda: _swallow(lambda: httpx.post(
                base + "/v1/chat/completions", json=chat(" ".join(WORDS[:20])), timeout=120, trust_env=False,
                headers={"authorization": f"Bearer {KEY}"})), daemon=True)
            t.start()
            while not rec.chat_requests():  # forwarded: the upstream holds it for 60 s
                assert time.monotonic() < deadline
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            stop_process(proc)
    assert total_spent(postgres, pg_url) == 1.0
    assert postgres.sql(pg_url, "SELECT count(*) FROM dptext_memo WHERE text IS NOT NULL") == [(1,)]


def _swallow(fn):
    try:
        fn()
    except httpx.HTTPError:
        pass


def test_database_unreachable_mid_run_fails_closed(postgres, pg_url):
    with recording_server(reply="Noted.") as rec:
        with serve_app(create_app(pg_config(rec.url, pg_url))) as url:
            ok = httpx.post(url + "/chat/completions", json=chat("first private words"), trust_env=False,
                            headers={"authorization": f"Bearer {KEY}"}, timeout=60)
            assert ok.status_code == 200
            db = pg_url.rsplit("/", 1)[1]
            postgres.sql(postgres.base + "/postgres", f"ALTER DATABASE {db} ALLOW_CONNECTIONS false")
            postgres.sql(postgres.base + "/postgres",
                         "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (db,))
            r = httpx.post(url + "/chat/completions", json=chat("my diagnosis is asthma"), trust_env=False,
                           headers={"authorization": f"Bearer {KEY}"}, timeout=60)
            assert r.status_code == 503 and r.json()["error"]["code"] == "state_unavailable"
            assert len(rec.chat_requests()) == 1  # nothing of the second request went upstream
            postgres.sql(postgres.base + "/postgres", f"ALTER DATABASE {db} ALLOW_CONNECTIONS true")
            r = httpx.post(url + "/chat/completions", json=chat("my diagnosis is asthma"), trust_env=False,
                           headers={"authorization": f"Bearer {KEY}"}, timeout=60)
            assert r.status_code == 200  # back once the database is


def test_start_up_errors_are_one_line(postgres, pg_url):
    create_app(pg_config("http://127.0.0.1:9/v1", pg_url)).state.services.accountant.close()  # migrates
    postgres.sql(pg_url, "UPDATE dptext_schema SET version = 99")
    with pytest.raises(DPTextError, match=r"schema version 99, this dptext needs 1"):
        create_app(pg_config("http://127.0.0.1:9/v1", pg_url))
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/x"
    with pytest.raises(DPTextError, match=r"^config state: cannot use the PostgreSQL database: .*127\.0\.0\.1"):
        create_app(pg_config("http://127.0.0.1:9/v1", dead))
    with pytest.raises(DPTextError, match=r"privacy\.memo\.secret: must be set"):
        config("http://127.0.0.1:9/v1", None, state=pg_url)


def test_unreachable_database_stops_dptext_serve_with_exit_2(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"upstream: {{base_url: 'http://127.0.0.1:9/v1', model: m}}\nauth: {{allow_anonymous: true}}\n"
                    f"state: postgresql://u:hunter2@127.0.0.1:{free_port()}/x\n"
                    f"privacy: {{memo: {{secret: {SECRET}}}}}\n")
    p = subprocess.run([sys.executable, "-m", "dptext.cli", "serve", "--check", "-c", str(path)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dptext: error: config state: cannot use the PostgreSQL")
    assert "hunter2" not in p.stderr
