"""The OpenAI-compatible privacy proxy: ``create_app(config) -> FastAPI``.

Request path of ``POST /v1/chat/completions`` (each step fails closed: an
error answers at once and nothing has gone upstream yet):

1. bearer key -> key id (401); per-key token bucket (429);
2. body read with a size limit (413), JSON decoded, messages split into
   public and private segments (400, see :mod:`dptext.server.request`);
3. every private segment of every turn perturbed locally (500 on failure);
4. only then the perturbed conversation goes upstream (502 / 504 on failure);
5. ``mode: perturb`` returns the upstream answer; ``mode: inferdpt`` hands it
   to the local extraction model, whose reply is returned (or streamed).

Every answer carries ``x-request-id``; successful ones also the privacy
report (``x-dptext-privacy`` header, ``dptext`` body field) and a
``server-timing`` header (perturb / upstream / extract milliseconds). Logs
hold ids, sizes, counts and timings only, never message text.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from dptext.errors import DPTextError
from dptext.server.auth import KeyStore, RateLimiter
from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError, bad_request
from dptext.server.metrics import Metrics
from dptext.server.privacy import HEADER, Perturber
from dptext.server.request import parse_request
from dptext.server.stream import local_stream, relay
from dptext.server.upstream import Upstream

log = logging.getLogger("dptext.server")
INLINE_CHARS = 4096  # private text up to this size is perturbed on the event loop (about a millisecond)
DRAIN_FACTOR = 16  # an oversize body is read (and discarded) up to this many limits so the 413 arrives


class Ctx:
    """Per-request bookkeeping: only sizes, counts, ids and timings."""

    def __init__(self) -> None:
        self.rid = "dpt-" + uuid.uuid4().hex[:16]
        self.t0 = time.perf_counter()
        self.key = "-"
        self.size = 0
        self.n_messages = 0
        self.private_chars = 0
        self.units = None
        self.timing: dict[str, float] = {}

    def server_timing(self) -> str:
        """``perturb`` / ``upstream`` / ``extract`` so far, and ``app``: time in the handler until now."""
        parts = {**self.timing, "app": time.perf_counter() - self.t0}
        return ", ".join(f"{k};dur={v * 1000:.2f}" for k, v in parts.items())


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    too_big = ApiError(413, f"request body is larger than the limit of {limit} bytes", code="request_too_large",
                       headers={"connection": "close"})
    if declared and declared.isdigit() and int(declared) > limit * DRAIN_FACTOR:
        raise too_big
    buf = bytearray()
    over = False
    async for part in request.stream():
        if not over:
            buf += part
            over = len(buf) > limit
            if over:
                buf = bytearray()
                seen = limit + 1
        else:
            seen += len(part)
            if seen > limit * DRAIN_FACTOR:
                break
    if over:
        raise too_big
    return bytes(buf)


def create_app(cfg: ServerConfig, *, perturber: Perturber | None = None, extractor=None) -> FastAPI:
    """Build the app; the mechanism (and, in inferdpt mode, the local model) load here, before serving."""
    keys, limiter, metrics = KeyStore(cfg), RateLimiter(cfg), Metrics()
    perturber = perturber or Perturber(cfg)
    if cfg.mode == "inferdpt" and extractor is None:
        from dptext.server.extract import Extractor

        extractor = Extractor(cfg)
    upstream = Upstream(cfg)

    @asynccontextmanager
    async def lifespan(app):
        yield
        await upstream.aclose()

    app = FastAPI(title="dptext privacy proxy", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.cfg, app.state.metrics, app.state.perturber = cfg, metrics, perturber

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return ApiError(exc.status_code, str(exc.detail), code="not_found" if exc.status_code == 404 else None
                        ).response()

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok", "mode": cfg.mode, "mechanism": perturber.mech.name,
                "epsilon": perturber.mech.epsilon}

    @app.get("/metrics")
    async def prometheus():
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/v1/models")
    async def models(request: Request):
        try:
            keys.identify(request.headers.get("authorization"))
        except ApiError as exc:
            return exc.response()
        return {"object": "list", "data": [{"id": cfg.model_name, "object": "model", "created": 0,
                                            "owned_by": "dptext"}]}

    def finish(ctx: Ctx, status: int | str) -> None:
        total = time.perf_counter() - ctx.t0
        metrics.inc("dptext_requests_total", mode=cfg.mode, key=ctx.key, status=str(status))
        metrics.observe("dptext_request_duration_seconds", total, mode=cfg.mode)
        metrics.add("dptext_in_flight_requests", -1)
        u = ctx.units or {}
        log.info("request id=%s key=%s status=%s bytes=%d messages=%d private_chars=%d units=%s/%s/%s "
                 "perturb_ms=%.1f upstream_ms=%.1f total_ms=%.1f", ctx.rid, ctx.key, status, ctx.size,
                 ctx.n_messages, ctx.private_chars, u.get("perturbed", 0), u.get("kept", 0), u.get("dropped", 0),
                 ctx.timing.get("perturb", 0) * 1000, ctx.timing.get("upstream", 0) * 1000, total * 1000)

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        ctx = Ctx()
        metrics.add("dptext_in_flight_requests", 1)
        try:
            resp = await handle(request, ctx)
        except ApiError as exc:
            finish(ctx, exc.status)
            return exc.response({"x-request-id": ctx.rid})
        except Exception as exc:  # noqa: BLE001 - log the type only; messages may quote input
            log.error("request id=%s failed: %s", ctx.rid, type(exc).__name__)
            finish(ctx, 500)
            return ApiError(500, f"internal error (request {ctx.rid})", type="server_error",
                            code="internal_error").response({"x-request-id": ctx.rid})
        if not isinstance(resp, StreamingResponse):
            finish(ctx, resp.status_code)
        return resp

    async def handle(request: Request, ctx: Ctx):
        ctx.key = keys.identify(request.headers.get("authorization"))
        limiter.check(ctx.key)
        raw = await read_body(request, cfg.limits.max_body_bytes)
        ctx.size = len(raw)
        metrics.inc("dptext_request_bytes_total", len(raw))
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise bad_request("request body is not valid JSON", code="invalid_json") from None
        req = parse_request(body, cfg)
        ctx.n_messages = len(req.messages)
        ctx.private_chars = sum(m.private_chars for m in req.messages)
        if cfg.mode == "inferdpt" and req.params.get("n", 1) != 1:
            raise bad_request("mode inferdpt supports n = 1 only", param="n")

        t = time.perf_counter()
        try:  # short texts inline (no thread hop) when the mechanism is free; long ones in a worker thread
            perturbed = perturber.perturb(req, blocking=False) if ctx.private_chars <= INLINE_CHARS else None
            if perturbed is None:
                perturbed = await run_in_threadpool(perturber.perturb, req)
        except DPTextError as exc:  # the input cannot be perturbed (e.g. too many units)
            raise ApiError(400, f"cannot perturb the private text: {exc}; nothing was sent upstream",
                           code="perturbation_failed") from None
        except Exception as exc:  # noqa: BLE001 - fail closed on anything
            log.error("request id=%s perturbation failed: %s", ctx.rid, type(exc).__name__)
            raise ApiError(500, "perturbation failed; nothing was sent upstream", type="server_error",
                           code="perturbation_failed") from None
        ctx.timing["perturb"] = time.perf_counter() - t
        metrics.observe("dptext_perturb_duration_seconds", ctx.timing["perturb"])
        ctx.units = perturbed.report["units"]
        for action, n in ctx.units.items():
            metrics.inc("dptext_units_total", n, action=action)
        report = {**perturbed.report, "request_id": ctx.rid}
        if extractor is not None:
            report["extraction"] = extractor.describe()
        headers = {"x-request-id": ctx.rid, HEADER: perturbed.header()}
        payload = {"model": cfg.upstream.model, "messages": perturbed.messages, **req.params}

        async def on_end(status: str) -> None:
            metrics.inc("dptext_upstream_requests_total", outcome=status)
            finish(ctx, 200 if status == "ok" else f"stream_{status}")

        if req.stream and cfg.mode == "perturb":
            payload["stream"] = True
            t = time.perf_counter()
            cm = upstream.stream(payload)
            chunks = await upstream_call(cm.__aenter__())
            ctx.timing["upstream"] = time.perf_counter() - t
            headers["server-timing"] = ctx.server_timing()

            async def end(status: str) -> None:
                await cm.__aexit__(None, None, None)
                await on_end(status)

            return StreamingResponse(relay(chunks, report, end), media_type="text/event-stream", headers=headers)

        t = time.perf_counter()
        data, _ = await upstream_call(upstream.complete(payload))
        ctx.timing["upstream"] = time.perf_counter() - t
        metrics.observe("dptext_upstream_duration_seconds", ctx.timing["upstream"])
        metrics.inc("dptext_upstream_requests_total", outcome="ok")
        if cfg.mode == "perturb":
            data["dptext"] = report
            headers["server-timing"] = ctx.server_timing()
            return JSONResponse(data, headers=headers)

        generation = (data["choices"][0].get("message") or {}).get("content") or ""
        max_tokens = req.params.get("max_completion_tokens") or req.params.get("max_tokens")
        headers["server-timing"] = ctx.server_timing()

        async def end_local(status: str) -> None:
            finish(ctx, 200 if status == "ok" else f"stream_{status}")

        if req.stream:
            pieces = extractor.stream(req, generation, max_tokens)
            return StreamingResponse(local_stream(pieces, "chatcmpl-" + ctx.rid, cfg.model_name, report, end_local),
                                     media_type="text/event-stream", headers=headers)
        t = time.perf_counter()
        try:
            out = await run_in_threadpool(extractor.complete, req, generation, max_tokens)
        except Exception as exc:  # noqa: BLE001
            log.error("request id=%s extraction failed: %s", ctx.rid, type(exc).__name__)
            raise ApiError(500, "local extraction failed", type="server_error", code="extraction_failed") from None
        ctx.timing["extract"] = time.perf_counter() - t
        headers["server-timing"] = ctx.server_timing()
        return JSONResponse({
            "id": "chatcmpl-" + ctx.rid, "object": "chat.completion", "created": int(time.time()),
            "model": cfg.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                         "logprobs": None, "finish_reason": out.finish_reason or "stop"}],
            "usage": {"prompt_tokens": out.prompt_tokens or 0, "completion_tokens": out.completion_tokens or 0,
                      "total_tokens": (out.prompt_tokens or 0) + (out.completion_tokens or 0)},
            "dptext": {**report, "remote_usage": data.get("usage")},
        }, headers=headers)

    async def upstream_call(coro):
        try:
            return await coro
        except ApiError as exc:
            metrics.inc("dptext_upstream_requests_total", outcome=exc.code or "error")
            raise

    return app

