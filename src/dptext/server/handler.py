"""``POST /v1/chat/completions``, one small step per method (see :mod:`dptext.server.app` for the path)."""

from __future__ import annotations

import logging
import time
import uuid

from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from dptext.errors import DPTextError
from dptext.privacy.accounting import Charge
from dptext.server.body import read_body
from dptext.server.errors import ApiError, bad_request
from dptext.server.privacy import HEADER, Perturbed
from dptext.server.request import ChatRequest, decode_body, parse_request
from dptext.server.services import Services
from dptext.server.stream import local_stream, relay
from dptext.server.worker import perturb_and_charge, state_error

log = logging.getLogger("dptext.server")


class Ctx:
    """Per-request bookkeeping: only sizes, counts, ids, reason codes and timings."""

    def __init__(self) -> None:
        self.rid = "dpt-" + uuid.uuid4().hex[:16]
        self.t0 = time.perf_counter()
        self.key = "-"
        self.size = 0
        self.n_messages = 0
        self.private_chars = 0
        self.units = None
        self.code = "-"
        self.timing: dict[str, float] = {}

    def server_timing(self) -> str:
        """Seconds so far as ``name;dur=ms``: ``queue`` (waiting for a perturbation worker and slot),
        ``perturb`` (inside the core), ``upstream``, ``extract``, and ``app``: time in the handler until now."""
        parts = {**self.timing, "app": time.perf_counter() - self.t0}
        return ", ".join(f"{k};dur={v * 1000:.2f}" for k, v in parts.items())


class ChatHandler:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        self.cfg = svc.cfg

    # ----- entry point and bookkeeping ----------------------------------------------------------------------
    async def chat(self, request: Request):
        ctx = Ctx()
        self.svc.metrics.add("dptext_in_flight_requests", 1)
        try:
            resp = await self.handle(request, ctx)
        except ApiError as exc:
            ctx.code = exc.code or str(exc.status)
            self.finish(ctx, exc.status)
            return exc.response({"x-request-id": ctx.rid})
        except Exception as exc:  # noqa: BLE001 - log the type only; messages may quote input
            log.error("request id=%s failed: %s", ctx.rid, type(exc).__name__)
            ctx.code = "internal_error"
            self.finish(ctx, 500)
            return ApiError(500, f"internal error (request {ctx.rid})", type="server_error",
                            code="internal_error").response({"x-request-id": ctx.rid})
        if not isinstance(resp, StreamingResponse):
            self.finish(ctx, resp.status_code)
        return resp

    def finish(self, ctx: Ctx, status: int | str) -> None:
        m = self.svc.metrics
        total = time.perf_counter() - ctx.t0
        m.inc("dptext_requests_total", mode=self.cfg.mode, key=ctx.key, status=str(status))
        m.observe("dptext_request_duration_seconds", total, mode=self.cfg.mode)
        m.add("dptext_in_flight_requests", -1)
        m.record_key(ctx.key, status == 200, total)
        u = ctx.units or {}
        log.info("request id=%s key=%s status=%s code=%s bytes=%d messages=%d private_chars=%d units=%s/%s/%s "
                 "perturb_ms=%.1f upstream_ms=%.1f total_ms=%.1f", ctx.rid, ctx.key, status, ctx.code, ctx.size,
                 ctx.n_messages, ctx.private_chars, u.get("perturbed", 0), u.get("kept", 0), u.get("dropped", 0),
                 ctx.timing.get("perturb", 0) * 1000, ctx.timing.get("upstream", 0) * 1000, total * 1000)

    # ----- the steps --------------------------------------------------------------------------------------------
    async def handle(self, request: Request, ctx: Ctx):
        req = await self.admit(request, ctx)
        report, headers, messages = await self.perturb(req, ctx)
        if await request.is_disconnected():  # the client gave up (timeout, retry): do not forward this attempt
            raise ApiError(499, "the client closed the connection before the request was forwarded; nothing "
                           "was sent upstream", code="client_closed")
        payload = {"model": self.cfg.upstream.model, "messages": messages, **req.params}
        if req.stream and self.cfg.mode == "perturb":
            return await self.relay_stream(payload, report, headers, ctx)
        data = await self.call_upstream(payload, ctx)
        if self.cfg.mode == "perturb":
            data["model"] = self.cfg.model_name
            data["dptext"] = report
            headers["server-timing"] = ctx.server_timing()
            return JSONResponse(data, headers=headers)
        return await self.extract(req, data, report, headers, ctx)

    async def admit(self, request: Request, ctx: Ctx) -> ChatRequest:
        """Key, rate limit, body (size and time limits), strict JSON, request shape."""
        ctx.key = self.svc.keys.identify(request.headers.get("authorization"))
        self.svc.limiter.check(ctx.key)
        raw = await read_body(request, self.cfg.limits.max_body_bytes, self.cfg.limits.read_timeout_s)
        ctx.size = len(raw)
        self.svc.metrics.inc("dptext_request_bytes_total", len(raw))
        req = parse_request(decode_body(raw), self.cfg)
        ctx.n_messages = len(req.messages)
        ctx.private_chars = sum(m.private_chars for m in req.messages)
        if self.cfg.mode == "inferdpt" and req.params.get("n", 1) != 1:
            raise bad_request("mode inferdpt supports n = 1 only", param="n")
        return req

    async def perturb(self, req: ChatRequest, ctx: Ctx) -> tuple[dict, dict, list[dict]]:
        """Perturb and charge in a worker thread (:meth:`perturb_and_charge`); errors fail closed."""
        t = time.perf_counter()
        try:
            perturbed, charge = await self.svc.scheduler.run(self.perturb_and_charge, req, ctx.key, ctx.timing, t)
        except ApiError:
            raise
        except Exception as exc:  # noqa: BLE001 - the memo or the ledger failed (maybe inside the core)
            state = state_error(exc)
            if state is None:
                raise self._perturb_failed(exc, ctx) from None
            log.error("request id=%s state store failed: %s", ctx.rid, state)
            raise ApiError(503, "the proxy's state store (memo / privacy ledger) cannot be read or written; "
                           "nothing was sent upstream", type="server_error", code="state_unavailable",
                           headers={"retry-after": "1"}) from None
        self.svc.metrics.observe("dptext_perturb_duration_seconds", ctx.timing["perturb"])
        ctx.units = perturbed.report["units"]
        for action, n in ctx.units.items():
            self.svc.metrics.inc("dptext_units_total", n, action=action)
        return self.report(perturbed, charge, ctx)

    @staticmethod
    def _perturb_failed(exc: Exception, ctx: Ctx) -> ApiError:
        """Any other failure while perturbing or charging: 400 for bad input, else 500; nothing was sent."""
        if isinstance(exc, DPTextError):  # the input cannot be perturbed (e.g. too many units)
            return ApiError(400, f"cannot perturb the private text: {exc}; nothing was sent upstream",
                            code="perturbation_failed")
        log.error("request id=%s perturbation failed: %s", ctx.rid, type(exc).__name__)
        return ApiError(500, "perturbation failed; nothing was sent upstream", type="server_error",
                        code="perturbation_failed")

    def perturb_and_charge(self, gate, req: ChatRequest, key: str, timing: dict, submitted: float
                           ) -> tuple[Perturbed, Charge]:
        """Worker thread: perturb, charge the key (429 over budget), then commit the memo
        (:func:`dptext.server.worker.perturb_and_charge`), so the SQLite writes and the core stay off the
        event loop."""
        return perturb_and_charge(self.svc.perturber, self.svc.accountant, gate, req, key, timing, submitted)

    def report(self, perturbed: Perturbed, charge: Charge, ctx: Ctx) -> tuple[dict, dict, list[dict]]:
        """The privacy report (body field), the response headers and the upstream messages of a charged request."""
        spent = perturbed.report["epsilon_spent"]
        report = {**perturbed.report, "epsilon_total": charge.total, "epsilon_window": charge.window,
                  "epsilon_budget": charge.budget, "request_id": ctx.rid}
        perturbed.report = report
        if self.svc.extractor is not None:
            report["extraction"] = self.svc.extractor.describe()
        headers = {"x-request-id": ctx.rid, HEADER: perturbed.header(),
                   "x-dptext-epsilon-spent": "none" if spent is None else f"{spent:g}",
                   "x-dptext-epsilon-total": f"{charge.total:g}"}
        return report, headers, perturbed.messages

    async def call_upstream(self, payload: dict, ctx: Ctx) -> dict:
        t = time.perf_counter()
        try:
            data, _ = await self.svc.upstream.complete(payload)
        except ApiError as exc:
            self.svc.metrics.inc("dptext_upstream_requests_total", outcome=exc.code or "error")
            raise
        ctx.timing["upstream"] = time.perf_counter() - t
        self.svc.metrics.observe("dptext_upstream_duration_seconds", ctx.timing["upstream"])
        self.svc.metrics.inc("dptext_upstream_requests_total", outcome="ok")
        return data

    async def relay_stream(self, payload: dict, report: dict, headers: dict, ctx: Ctx) -> StreamingResponse:
        payload["stream"] = True
        t = time.perf_counter()
        cm = self.svc.upstream.stream(payload)
        try:
            chunks = await cm.__aenter__()
        except ApiError as exc:
            self.svc.metrics.inc("dptext_upstream_requests_total", outcome=exc.code or "error")
            raise
        ctx.timing["upstream"] = time.perf_counter() - t
        headers["server-timing"] = ctx.server_timing()

        async def end(status: str) -> None:
            await cm.__aexit__(None, None, None)
            self.svc.metrics.inc("dptext_upstream_requests_total", outcome=status)
            ctx.code = status if status != "ok" else "-"
            self.finish(ctx, 200 if status == "ok" else f"stream_{status}")

        return StreamingResponse(relay(chunks, report, end, self.cfg.model_name), media_type="text/event-stream",
                                 headers=headers)

    async def extract(self, req: ChatRequest, data: dict, report: dict, headers: dict, ctx: Ctx):
        """``mode: inferdpt``: the local model rebuilds the answer from the raw text and the remote answer."""
        extractor = self.svc.extractor
        generation = (data["choices"][0].get("message") or {}).get("content") or ""
        max_tokens = req.params.get("max_completion_tokens") or req.params.get("max_tokens")
        headers["server-timing"] = ctx.server_timing()
        if req.stream:
            async def end_local(status: str) -> None:
                self.finish(ctx, 200 if status == "ok" else f"stream_{status}")

            pieces = extractor.stream(req, generation, max_tokens)
            return StreamingResponse(local_stream(pieces, "chatcmpl-" + ctx.rid, self.cfg.model_name, report,
                                                  end_local), media_type="text/event-stream", headers=headers)
        t = time.perf_counter()
        try:
            out = await run_in_threadpool(extractor.complete, req, generation, max_tokens)
        except Exception as exc:  # noqa: BLE001
            log.error("request id=%s extraction failed: %s", ctx.rid, type(exc).__name__)
            raise ApiError(500, "local extraction failed", type="server_error", code="extraction_failed") from None
        ctx.timing["extract"] = time.perf_counter() - t
        headers["server-timing"] = ctx.server_timing()
        usage = {"prompt_tokens": out.prompt_tokens or 0, "completion_tokens": out.completion_tokens or 0}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return JSONResponse({
            "id": "chatcmpl-" + ctx.rid, "object": "chat.completion", "created": int(time.time()),
            "model": self.cfg.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                         "logprobs": None, "finish_reason": out.finish_reason or "stop"}],
            "usage": usage, "dptext": {**report, "remote_usage": data.get("usage")},
        }, headers=headers)
