"""Shared set-up of the web tests: real uvicorn servers on loopback, the playground and a dashboard app.

``serve_app`` runs an ASGI app on 127.0.0.1 (a free port); the module-scoped ``base`` fixture serves the
playground and ``client`` / ``api`` are httpx clients of it. Test modules import the fixtures by name.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import httpx
import pytest
import uvicorn


@contextmanager
def serve_app(app):
    """``app`` under uvicorn on 127.0.0.1 (a free port) in a background thread; yields the base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def base():
    from dptext.web.app import create_app

    with serve_app(create_app()) as url:
        yield url


@pytest.fixture(scope="module")
def client(base):
    with httpx.Client(base_url=base, timeout=600) as c:
        yield c


@pytest.fixture(scope="module")
def api(client):
    """The same client under the name the browser tests use for the JSON API."""
    return client


def fake_snapshot():
    return {"settings": {"mode": "chat", "mechanism": "rantext", "epsilon": 3.0, "space": "cl100k-11k",
                         "upstream_model": "smollm2", "policy": None},  # as the proxy sends policy all
            "keys": {"alice": {"requests": 12, "errors": 1, "latency_ms": {"p50": 8.5, "p95": 21.0},
                               "epsilon_spent": 42.0, "epsilon_history": [[1_700_000_000, 12.0],
                                                                          [1_700_000_060, 42.0]]},
                     "bob": {"requests": 3, "errors": 0, "latency_ms": {"p50": 5.0, "p95": 6.0},
                             "epsilon_spent": 9.0, "epsilon_history": [[1_700_000_030, 9.0]]}}}


def dashboard_app(key: str = "secret"):
    from fastapi import Depends, FastAPI, Header, HTTPException

    from dptext.web.dashboard import make_router

    def auth(authorization: str | None = Header(None)):
        if authorization != f"Bearer {key}":
            raise HTTPException(401, "missing or wrong key")

    app = FastAPI()
    app.include_router(make_router(fake_snapshot, data_dependencies=[Depends(auth)]), prefix="/admin")
    return app
