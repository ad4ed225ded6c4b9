"""The playground: one page and the JSON API it uses, nothing else.

Routes: ``GET /`` (the page), ``GET /static/{file}`` (its CSS and JavaScript,
read from the package with :mod:`importlib.resources`), ``GET /api/mechanisms``,
``POST /api/perturb``, ``POST /api/transition``, ``POST /api/runs``,
``POST /api/retention``, ``GET /api/guide`` (the measured curves of docs/choosing.md, shipped as
``static/choosing-curves.json`` by ``benchmarks/make_choosing.py``). Errors are ``{"error": message, "field": name|null}``
with 400 (bad input), 413 (too large) or 500.

Privacy of the playground itself: text is never logged (errors log only the
exception type), nothing is fetched from or sent to anywhere else (the
Content-Security-Policy only allows this origin), request bodies are capped
(:data:`MAX_BODY_BYTES`) before they are read in full, and computation runs
in a worker thread, one request at a time.
"""

from __future__ import annotations

import json
import logging
import threading
from importlib import resources

import numpy as np
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from dptext.errors import DPTextError
from dptext.web import engine
from dptext.web.engine import MechanismCache, Settings, WebError
from dptext.web.retention import EPSILON_GRID, retention_curve
from dptext.web.view import make_policy, perturb_view, policy_module, transition_context

log = logging.getLogger("dptext.web")

MAX_BODY_BYTES = 256 * 1024
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
STATIC = {"playground.js": "text/javascript", "playground.css": "text/css", "svg.js": "text/javascript",
          "dashboard.js": "text/javascript", "guide.js": "text/javascript"}


def static_file(name: str) -> bytes:
    return resources.files("dptext.web").joinpath("static", name).read_bytes()


def secure(resp: Response) -> Response:
    resp.headers["content-security-policy"] = CSP
    resp.headers["referrer-policy"] = "no-referrer"
    resp.headers["x-content-type-options"] = "nosniff"
    resp.headers["cache-control"] = "no-store"
    return resp


def error(status: int, message: str, field: str | None = None) -> JSONResponse:
    return secure(JSONResponse({"error": message, "field": field}, status_code=status))


def too_large(size: int) -> WebError:
    return WebError(f"the request is {size / 1e6:.1f} MB; the playground takes at most "
                    f"{MAX_BODY_BYTES // 1024} KB ({engine.MAX_TEXT_CHARS:,} characters of text): "
                    "paste a shorter passage", field="text", status=413)


async def read_json(request: Request) -> dict:
    """The request's JSON object, refused with 413 past :data:`MAX_BODY_BYTES` without reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large(int(declared))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_large(int(declared) if declared and declared.isdigit() else len(body))
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise WebError("the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise WebError("the request body must be a JSON object")
    return data


def rng_of(body: dict) -> np.random.Generator:
    """OS entropy, or a fixed seed when the request names one (reproducing a run)."""
    seed = body.get("seed")
    if seed in (None, ""):
        return np.random.default_rng()
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise WebError(f"seed must be an integer >= 0 (got {seed!r})", field="seed")
    return np.random.default_rng(seed)


def mechanism_list() -> list[dict]:
    from dptext.mechanisms import MECHANISMS

    out = []
    for name in sorted(MECHANISMS):
        cls = MECHANISMS[name]
        if not cls.per_unit:
            continue
        doc = (cls.__doc__ or "").strip().splitlines()
        first = doc[0] if doc else name
        out.append({"name": name, "default_space": cls.default_space, "description": first,
                    "dp": bool(cls.dp),
                    "contextual": bool(cls.contextual)})
    return out


def create_app(*, cache_size: int = 6) -> FastAPI:
    app = FastAPI(title="dptext playground", docs_url=None, redoc_url=None, openapi_url=None)
    cache = MechanismCache(cache_size)
    lock = threading.Lock()  # one computation at a time: mechanisms keep per-call state

    def locked(fn, *args):
        with lock:
            return fn(*args)

    @app.exception_handler(WebError)
    async def _web_error(request: Request, exc: WebError):
        return error(exc.status, str(exc), exc.field)

    @app.exception_handler(DPTextError)
    async def _dptext_error(request: Request, exc: DPTextError):
        return error(400, str(exc), getattr(exc, "param", None))

    @app.middleware("http")
    async def _internal(request: Request, call_next):
        # catches here so that no traceback (whose message may quote the text) reaches a log
        try:
            return await call_next(request)
        except Exception as exc:
            log.error("playground: %s in %s", type(exc).__name__, request.url.path)  # never the text
            return error(500, f"internal error ({type(exc).__name__}); only its type was logged")

    @app.get("/")
    async def index():
        return secure(Response(static_file("playground.html"), media_type="text/html; charset=utf-8"))

    @app.get("/static/{name}")
    async def static(name: str):
        if name not in STATIC:
            return error(404, f"no static file {name!r}")
        return secure(Response(static_file(name), media_type=STATIC[name] + "; charset=utf-8"))

    @app.get("/api/mechanisms")
    async def mechanisms():
        from dptext.mechanisms.base import OOV_POLICIES
        from dptext.privacy.presets import PRESETS
        from dptext.spaces import list_spaces

        pol = policy_module()
        return secure(JSONResponse({
            "mechanisms": mechanism_list(), "spaces": list_spaces(), "oov": list(OOV_POLICIES),
            "policies": list(getattr(pol, "POLICIES", ("all", "entities", "tiered"))) if pol else None,
            "epsilon": {"min": 0.5, "max": 16, "step": 0.5, "default": 3},
            "limits": {"max_chars": engine.MAX_TEXT_CHARS, "max_body_bytes": MAX_BODY_BYTES,
                       "max_units": engine.MAX_UNITS, "max_runs": engine.MAX_RUNS},
            "retention_epsilons": list(EPSILON_GRID),
            "presets": [p.describe() for p in PRESETS.values()]}))

    @app.get("/api/guide")
    async def guide():
        # measured once by the sweep, not computed here: the same numbers as docs/choosing.md
        return secure(JSONResponse(json.loads(static_file("choosing-curves.json"))))

    @app.post("/api/perturb")
    async def perturb(request: Request):
        body = await read_json(request)
        settings = Settings.parse(body)
        text = engine.check_text(body.get("text"))
        policy, rng = make_policy(body, settings.epsilon), rng_of(body)
        return secure(JSONResponse(await run_in_threadpool(locked, perturb_view, cache, settings, text, rng,
                                                           policy)))

    @app.post("/api/transition")
    async def transition(request: Request):
        body = await read_json(request)
        settings = Settings.parse(body)
        top = body.get("top", 5)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 50:
            raise WebError(f"top must be an integer in 1..50 (got {top!r})", field="top")

        def run():
            mech, context, position = transition_context(cache, settings, body)
            return engine.transition(mech, context, position, top)

        return secure(JSONResponse(await run_in_threadpool(locked, run)))

    @app.post("/api/runs")
    async def runs(request: Request):
        body = await read_json(request)
        settings = Settings.parse(body)
        text = engine.check_text(body.get("text"))
        n = body.get("n", 20)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= engine.MAX_RUNS:
            raise WebError(f"n must be an integer in 1..{engine.MAX_RUNS} (got {n!r})", field="n")
        rng = rng_of(body)
        return secure(JSONResponse(await run_in_threadpool(
            locked, lambda: engine.repeated_runs(cache.get(settings), text, n, rng))))

    @app.post("/api/retention")
    async def retention(request: Request):
        body = await read_json(request)
        settings = Settings.parse(body)
        text = engine.check_text(body.get("text"))
        rng = rng_of(body)
        return secure(JSONResponse(await run_in_threadpool(
            locked, lambda: retention_curve(cache.get(settings), text, rng))))

    app.state.cache = cache
    return app
