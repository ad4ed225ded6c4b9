"""Server-sent events in the OpenAI wire format (``data: {chunk}\\n\\n`` ... ``data: [DONE]``).

Two sources: the upstream's own stream (``mode: perturb``, chunks relayed
with the ``dptext`` report added to the first one) and the local extraction
model (``mode: inferdpt``, chunks built here). An error after the first byte
cannot change the HTTP status any more, so it is sent as a final
``data: {"error": ...}`` event, which the OpenAI SDKs raise as ``APIError``.
"""

from __future__ import annotations

import json
import time

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from dptext.server.errors import ApiError

DONE = b"data: [DONE]\n\n"


def event(obj: dict) -> bytes:
    return f"data: {json.dumps(obj, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def chunk(cid: str, model: str, created: int, delta: dict, finish: str | None = None, **extra) -> dict:
    out = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
           "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    out.update(extra)
    return out


async def relay(chunks, report: dict, on_end, model: str | None = None):
    """Relay upstream chunks (``model`` renamed to the proxy's); ``on_end(status)`` runs once, however it ends."""
    status = "ok"
    try:
        first = True
        async for c in chunks:
            if first:
                c["dptext"] = report
                first = False
            if model is not None and "model" in c:
                c["model"] = model
            yield event(c)
        yield DONE
    except ApiError as exc:
        status = exc.code or "error"
        yield exc.sse()
    except Exception:  # noqa: BLE001 - the client gets a clear event, never a hang
        status = "error"
        yield ApiError(502, "stream failed", type="server_error", code="stream_error").sse()
    finally:
        await on_end(status)


async def local_stream(pieces, cid: str, model: str, report: dict, on_end):
    """SSE from the local extraction model's text pieces (a blocking iterator, run in a thread)."""
    created = int(time.time())
    status = "ok"
    try:
        yield event(chunk(cid, model, created, {"role": "assistant", "content": ""}, dptext=report))
        async for piece in iterate_in_threadpool(pieces):
            yield event(chunk(cid, model, created, {"content": piece}))
        yield event(chunk(cid, model, created, {}, "stop"))
        yield DONE
    except Exception as exc:  # noqa: BLE001
        status = "extraction_failed"
        yield ApiError(500, f"local extraction failed ({type(exc).__name__})", type="server_error",
                       code="extraction_failed").sse()
    finally:
        if hasattr(pieces, "close"):  # releases the model lock when the client went away mid-stream
            await run_in_threadpool(pieces.close)
        await on_end(status)
