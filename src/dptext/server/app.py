"""The OpenAI-compatible privacy proxy: ``create_app(config) -> FastAPI``.

Request path of ``POST /v1/chat/completions`` (each step fails closed: an
error answers at once and nothing has gone upstream yet):

1. bearer key -> key id (401); per-key token bucket (429);
2. body read within a size limit (413) and a time limit (408), strict JSON
   decoded, messages split into public and private segments (400, see
   :mod:`dptext.server.request`);
3. private segments perturbed in a worker thread (:mod:`dptext.server.scheduler`:
   503 when the queue is full, 413 over the unit limit), repeats replayed
   from the memo and concurrent copies waiting for one perturbation
   (:mod:`dptext.privacy.flight`), the ε of fresh units charged to the key
   (429 over budget); a state store that fails answers 503 ``state_unavailable``;
4. only then, unless the client has hung up meanwhile (499, nothing sent), the
   perturbed conversation goes upstream (502 / 504 / 429);
5. ``mode: perturb`` returns the upstream answer; ``mode: inferdpt`` hands it
   to the local extraction model, whose reply is returned (or streamed).

Every answer carries ``x-request-id``; successful ones also the privacy
report (``x-dptext-privacy`` header, ``dptext`` body field), this request's
ε and the key's running total (``x-dptext-epsilon-spent`` /
``x-dptext-epsilon-total``) and a ``server-timing`` header. Logs hold ids,
sizes, counts, reason codes and timings only, never message text.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError
from dptext.server.handler import ChatHandler
from dptext.server.privacy import Perturber
from dptext.server.services import Services


def create_app(cfg: ServerConfig, *, perturber: Perturber | None = None, extractor=None) -> FastAPI:
    """Build the app; the mechanism (and, in inferdpt mode, the local model) load here, before serving."""
    svc = Services.build(cfg, perturber=perturber, extractor=extractor)

    @asynccontextmanager
    async def lifespan(app):
        yield
        await svc.aclose()

    app = FastAPI(title="dptext privacy proxy", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None, redirect_slashes=False)  # never redirect: Location would come from Host
    app.state.cfg, app.state.services, app.state.chat = cfg, svc, ChatHandler(svc)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # plain Starlette routes: each takes the Request and calls one function; no dependency solving per request
    app.router.add_route("/healthz", healthz, methods=["GET"])
    app.router.add_route("/metrics", metrics, methods=["GET"])
    app.router.add_route("/v1/models", models, methods=["GET"])
    app.router.add_route("/v1/chat/completions", chat, methods=["POST"])
    if cfg.dashboard:
        _mount_dashboard(app, svc)
    return app


async def chat(request: Request):
    return await request.app.state.chat.chat(request)


async def healthz(request: Request):
    return JSONResponse(health(request.app.state.services))


async def metrics(request: Request):
    svc = request.app.state.services
    if svc.cfg.metrics.require_key:
        try:
            svc.keys.identify(request.headers.get("authorization"))
        except ApiError as exc:
            return exc.response()
    return PlainTextResponse(svc.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def models(request: Request):
    svc = request.app.state.services
    try:
        svc.keys.identify(request.headers.get("authorization"))
    except ApiError as exc:
        return exc.response()
    return JSONResponse(model_list(svc))


async def _http_error(request: Request, exc: StarletteHTTPException):
    return ApiError(exc.status_code, str(exc.detail), code="not_found" if exc.status_code == 404 else None).response()


def health(svc: Services) -> dict:
    m = svc.perturber.mech
    return {"status": "ok", "mode": svc.cfg.mode, "mechanism": m.name, "epsilon": m.epsilon}


def model_list(svc: Services) -> dict:
    return {"object": "list", "data": [{"id": svc.cfg.model_name, "object": "model", "created": 0,
                                        "owned_by": "dptext"}]}


def summary(svc: Services) -> str:
    """One line naming what this proxy does: mode, mechanism, ε, space, claim, upstream, memo, budget."""
    cfg, m, claim = svc.cfg, svc.perturber.mech, svc.perturber.claim
    budget = cfg.privacy.budget
    return (f"mode={cfg.mode} mechanism={m.name} epsilon={m.epsilon:g} space={m.space.name} "
            f"claim={claim['kind']}:{claim['bound']} upstream={cfg.upstream.base_url} "
            f"upstream_model={cfg.upstream.model} model_name={cfg.model_name} "
            f"memo={'on' if svc.memo is not None or (svc.scheduler.remote and cfg.privacy.memo.enabled) else 'off'} "
            f"perturb_process={'on' if svc.scheduler.remote is not None else 'off'} "
            f"budget={'none' if budget.epsilon is None else f'{budget.epsilon:g}/{budget.window_s:g}s'} "
            f"metrics_auth={'on' if cfg.metrics.require_key else 'off'} "
            f"dashboard={'on' if cfg.dashboard else 'off'}")


def snapshot(svc: Services) -> dict:
    """Dashboard data: the settings, and per key requests, errors, latency and ε over time."""
    cfg, m = svc.cfg, svc.perturber.mech
    keys = svc.metrics.per_key()
    for key, acc in svc.accountant.snapshot().items():
        row = keys.setdefault(key, {"requests": 0, "errors": 0, "latency_ms": {"p50": None, "p95": None}})
        row["epsilon_spent"] = acc["epsilon_spent"]
        row["epsilon_history"] = acc["epsilon_history"]
        row["budget"] = acc["budget"]
    for row in keys.values():
        row.setdefault("epsilon_spent", 0.0)
        row.setdefault("epsilon_history", [])
    return {"settings": {"mode": cfg.mode, "mechanism": m.name, "epsilon": m.epsilon, "space": m.space.name,
                         "upstream_model": cfg.upstream.model,
                         "policy": svc.perturber.policy.describe() if svc.perturber.policy is not None else None},
            "keys": keys}


def _mount_dashboard(app: FastAPI, svc: Services) -> None:
    """``GET /dashboard`` from ``dptext.web.dashboard``; its data route (``/dashboard/data``) behind the keys.

    The page and its assets hold no data (a browser cannot send a bearer key on a navigation); the page asks
    for a key when the data route answers 401.
    """
    from fastapi import Depends

    try:
        from dptext.web.dashboard import make_router
    except ModuleNotFoundError as exc:
        from dptext.errors import DPTextError

        raise DPTextError(f"config dashboard: true needs dptext.web.dashboard ({exc.name} missing)") from None

    def require_key(request: Request) -> None:
        try:
            svc.keys.identify(request.headers.get("authorization"))
        except ApiError as exc:
            raise StarletteHTTPException(exc.status, exc.message) from None

    app.include_router(make_router(lambda: snapshot(svc), data_dependencies=[Depends(require_key)]))
