"""The proxy's dashboard: requests, errors and latency per key, ε spent per key over time, and the
mechanism settings, from one ``snapshot()`` function the server supplies.

``make_router(snapshot)`` serves ``GET /dashboard`` (the page), ``GET /dashboard/assets/{file}`` (its
CSS and JavaScript) and ``GET /dashboard/data`` (``snapshot()`` as JSON). The page and its assets hold
no data; ``data_dependencies`` (e.g. the server's auth) guard the data route. The page fetches the
data with relative URLs, so the router works under any prefix, and asks for a bearer key when the
data route answers 401 (kept in the tab's ``sessionStorage`` only). Snapshot shape::

    {"settings": {mode, mechanism, epsilon, space, upstream_model, policy},
     "keys": {key_id: {"requests": int, "errors": int, "latency_ms": {"p50": f, "p95": f},
                       "epsilon_spent": f, "epsilon_history": [[unix_ts, running_total], ...]}}}
"""

from __future__ import annotations

from typing import Callable, Sequence

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

ASSETS = {"dashboard.js": "text/javascript", "svg.js": "text/javascript", "playground.css": "text/css"}


def make_router(snapshot: Callable[[], dict], *, data_dependencies: Sequence = ()) -> APIRouter:
    from dptext.web.app import error, secure, static_file

    router = APIRouter()

    @router.get("/dashboard", include_in_schema=False)
    def page():
        return secure(Response(static_file("dashboard.html"), media_type="text/html; charset=utf-8"))

    @router.get("/dashboard/assets/{name}", include_in_schema=False)
    def asset(name: str):
        if name not in ASSETS:
            return error(404, f"no dashboard asset {name!r}")
        return secure(Response(static_file(name), media_type=ASSETS[name] + "; charset=utf-8"))

    @router.get("/dashboard/data", dependencies=list(data_dependencies), include_in_schema=False)
    def data():
        return secure(JSONResponse(snapshot()))

    return router
