"""The dashboard's data (requests, errors, latency and ε per key) from a real proxy, and its mount behind the keys."""

import importlib.util
import tempfile
import time

import httpx
import openai
import pytest
from llama_server import recording_server, serve_app

from dptext.errors import DPTextError
from dptext.server import config_from_dict, create_app, hash_key
from dptext.server.app import snapshot

KEYS = {"alice": "sk-dash-alice", "bob": "sk-dash-bob"}


def config(upstream_url, **over):
    data = {"upstream": {"base_url": upstream_url, "model": "up-model", "retries": 0},
            "privacy": {"mechanism": "rantext", "epsilon": 2},
            "auth": {"keys": [{"id": k, "sha256": hash_key(v)} for k, v in KEYS.items()]},
            "state_dir": tempfile.mkdtemp(prefix="dptext-dash-"), **over}
    return config_from_dict(data)


def test_snapshot_counts_requests_errors_latency_and_epsilon_per_key():
    with recording_server(reply="ok") as rec:
        app = create_app(config(rec.url))
        with serve_app(app) as url:
            alice = openai.OpenAI(base_url=url, api_key=KEYS["alice"], max_retries=0)
            bob = openai.OpenAI(base_url=url, api_key=KEYS["bob"], max_retries=0)
            t0 = time.time()
            alice.chat.completions.create(model="x", messages=[{"role": "user", "content": "Anna lives in Berlin"}])
            alice.chat.completions.create(model="x", messages=[{"role": "user", "content": "Tom works in Paris"}])
            alice.chat.completions.create(model="x", messages=[{"role": "user", "content": "Anna lives in Berlin"}])
            with pytest.raises(openai.BadRequestError):
                bob.chat.completions.create(model="x", messages=[{"role": "user", "content": "x"}], n=99)
            snap = snapshot(app.state.services)
    assert snap["settings"] == {"mode": "perturb", "mechanism": "rantext", "epsilon": 2.0, "space": "cl100k-11k",
                                "upstream_model": "up-model", "policy": None}
    a, b = snap["keys"]["alice"], snap["keys"]["bob"]
    assert (a["requests"], a["errors"], b["requests"], b["errors"]) == (3, 0, 1, 1)
    assert 0 < a["latency_ms"]["p50"] <= a["latency_ms"]["p95"] < 60_000
    assert a["epsilon_spent"] == 4.0 and b["epsilon_spent"] == 0.0  # two fresh requests at ε = 2, one replay
    assert [v for _, v in a["epsilon_history"]] == [2.0, 4.0]
    assert all(t0 - 1 <= t <= time.time() + 1 for t, _ in a["epsilon_history"])


def test_dashboard_mounts_behind_the_keys_or_refuses_to_start():
    with recording_server(reply="ok") as rec:
        cfg = config(rec.url, dashboard=True)
        try:
            have_page = importlib.util.find_spec("dptext.web.dashboard") is not None
        except ModuleNotFoundError:  # no dptext.web package at all
            have_page = False
        if not have_page:
            with pytest.raises(DPTextError, match="dashboard: true needs dptext.web.dashboard"):
                create_app(cfg)
            return
        with serve_app(create_app(cfg)) as url:
            base = url.removesuffix("/v1")
            page = httpx.get(base + "/dashboard", trust_env=False)  # the page holds no data: no key needed
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            assert httpx.get(base + "/dashboard/data", trust_env=False).status_code == 401
            r = httpx.get(base + "/dashboard/data", headers={"authorization": f"Bearer {KEYS['bob']}"},
                          trust_env=False)
            assert r.status_code == 200 and r.json()["settings"]["mechanism"] == "rantext"
