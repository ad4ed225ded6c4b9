"""The remote OpenAI-compatible endpoint: async HTTP with a deadline and bounded retries.

The proxy serves many clients at once and streams, so it talks to the
upstream asynchronously with pooled keep-alive connections: non-streaming
calls through the small HTTP/1.1 client of :mod:`dptext.server.http1` (a
fraction of httpx's CPU per request), streams through one ``httpx.AsyncClient``.
Only the perturbed payload built by :mod:`dptext.server.privacy` is ever
passed in here.

Failure mapping (the client sees one clear OpenAI-style error, never a hang):

* connection refused / reset / DNS: retried ``retries`` times with
  exponential backoff, then **502** ``upstream_unreachable``;
* HTTP 5xx from the upstream: retried likewise, then **502**
  ``upstream_error`` naming the upstream status; other 4xx: 502 at once;
* HTTP 429: the next attempt waits the upstream's ``Retry-After`` (seconds)
  when it is at most ``max_retry_after_s``, else the backoff; when the
  attempts are used up, or the upstream asks for a longer wait, the client
  gets **429** ``upstream_rate_limited`` with the upstream's ``Retry-After``;
* no complete answer within ``timeout_s`` (one attempt's deadline, not
  retried): **504** ``upstream_timeout``. A stream has its own overall
  deadline, ``stream_deadline_s`` from the request to the last byte; past it
  the same error is sent as a final SSE event and the stream ends.

A stream is read to its end (after ``[DONE]`` too) before it is closed, so
its connection goes back to the pool for the next request.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager

import httpx

from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError
from dptext.server.http1 import ConnectionBroken, ConnectFailed, Pool

RETRY_STATUS = {429, 500, 502, 503, 504}


def _upstream_message(resp_text: str) -> str:
    try:
        msg = json.loads(resp_text)["error"]["message"]
    except Exception:
        msg = resp_text
    msg = " ".join(str(msg).split())
    return msg[:200]


def _status_error(status: int, text: str) -> ApiError:
    detail = _upstream_message(text)
    return ApiError(502, f"upstream answered HTTP {status}" + (f": {detail}" if detail else ""),
                    type="upstream_error", code="upstream_error")


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds (HTTP dates are not honoured: None)."""
    try:
        wait = float(value) if value is not None else None
    except ValueError:
        return None
    return wait if wait is not None and 0 <= wait < 86400 else None


def _failure(resp, text: str) -> Exception:
    """The error for an upstream HTTP error status: a _Retry (retryable) or an ApiError."""
    status = resp.status_code
    if status == 429:
        wait = _retry_after(resp.headers.get("retry-after"))
        headers = {"retry-after": str(max(1, int(wait + 0.999)))} if wait is not None else {}
        err = ApiError(429, "the upstream rate-limited this proxy" + (f"; retry in {wait:g} s" if wait else ""),
                       type="rate_limit_error", code="upstream_rate_limited", headers=headers)
        return _Retry(err, wait)
    err = _status_error(status, text)
    return _Retry(err) if status in RETRY_STATUS else err


class Upstream:
    def __init__(self, cfg: ServerConfig) -> None:
        u = cfg.upstream
        self.cfg = u
        headers = {"authorization": f"Bearer {u.api_key}"} if u.api_key else {}
        self.client = httpx.AsyncClient(
            base_url=u.base_url, headers=headers, trust_env=False,
            timeout=httpx.Timeout(u.timeout_s, connect=u.connect_timeout_s),
            limits=httpx.Limits(max_connections=u.max_connections, max_keepalive_connections=u.max_connections))
        self.pool = Pool(u.base_url, headers, connect_timeout_s=u.connect_timeout_s, max_connections=u.max_connections)

    async def aclose(self) -> None:
        await self.pool.aclose()
        await self.client.aclose()

    def _timeout(self) -> ApiError:
        return ApiError(504, f"upstream did not answer within {self.cfg.timeout_s:g} s",
                        type="upstream_error", code="upstream_timeout")

    def _unreachable(self, exc: Exception) -> ApiError:
        return ApiError(502, f"upstream unreachable ({type(exc).__name__})", type="upstream_error",
                        code="upstream_unreachable")

    async def _attempts(self, once):
        """Run ``once()`` with the deadline and the retry policy; returns its value."""
        last: ApiError | None = None
        wait = None
        for attempt in range(self.cfg.retries + 1):
            if attempt:
                await asyncio.sleep(wait if wait is not None else self.cfg.backoff_s * 2 ** (attempt - 1))
            wait = None
            try:
                async with asyncio.timeout(self.cfg.timeout_s):
                    return await once()
            except (TimeoutError, httpx.TimeoutException) as exc:
                if isinstance(exc, httpx.ConnectTimeout):
                    last = self._unreachable(exc)
                    continue
                raise self._timeout() from None
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                last = self._unreachable(exc)
            except (ConnectFailed, ConnectionBroken) as exc:
                last = ApiError(502, f"upstream unreachable ({exc})", type="upstream_error",
                                code="upstream_unreachable")
            except _Retry as r:
                last = r.error
                if r.wait is not None and r.wait > self.cfg.max_retry_after_s:
                    break  # the upstream asks for longer than we hold a client: pass its 429 on
                wait = r.wait
        raise last

    async def complete(self, payload: dict) -> tuple[dict, float]:
        """Non-streaming chat completion: (upstream JSON, seconds spent upstream)."""
        t0 = time.perf_counter()

        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()

        async def once():
            resp = await self.pool.request("POST", "/chat/completions", body)
            if resp.status_code >= 400:
                raise _failure(resp, resp.text)
            try:
                data = json.loads(resp.content)
            except ValueError:
                raise ApiError(502, "upstream answered with invalid JSON", type="upstream_error",
                               code="upstream_error") from None
            if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                raise ApiError(502, "upstream answer is not a chat completion", type="upstream_error",
                               code="upstream_error")
            return data

        data = await self._attempts(once)
        return data, time.perf_counter() - t0

    @asynccontextmanager
    async def stream(self, payload: dict):
        """Open a streaming completion (status checked) and yield an async iterator of JSON chunks.

        Errors before the first byte raise ApiError (the caller answers with a plain error);
        errors while iterating raise ApiError too (the caller sends it as an SSE event).
        """

        async def once():
            req = self.client.build_request("POST", "/chat/completions", json=payload)
            resp = await self.client.send(req, stream=True)
            if resp.status_code >= 400:
                text = (await resp.aread()).decode("utf-8", "replace")
                await resp.aclose()
                raise _failure(resp, text)
            return resp

        deadline = asyncio.get_running_loop().time() + self.cfg.stream_deadline_s
        resp = await self._attempts(once)
        try:
            yield self._chunks(resp, deadline)
        finally:
            await resp.aclose()

    def _stream_timeout(self) -> ApiError:
        return ApiError(504, f"upstream stream did not finish within {self.cfg.stream_deadline_s:g} s",
                        type="upstream_error", code="upstream_timeout")

    async def _lines(self, resp: httpx.Response, deadline: float):
        """The response's lines, each awaited within what is left of the stream's deadline."""
        loop = asyncio.get_running_loop()
        it = resp.aiter_lines().__aiter__()
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise self._stream_timeout()
            try:
                yield await asyncio.wait_for(it.__anext__(), left)
            except StopAsyncIteration:
                return
            except asyncio.TimeoutError:
                raise self._stream_timeout() from None

    async def _chunks(self, resp: httpx.Response, deadline: float):
        """The stream's JSON chunks. A 200 that is not ``text/event-stream``, or a stream that ends without
        ``[DONE]``, is an error (sent to the client as an SSE error event), never an empty successful stream."""
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "text/event-stream":
            await resp.aread()  # read to the end: the connection can go back to the pool
            raise ApiError(502, f"upstream answered a stream request with {ctype or 'no content type'}, "
                           "not an event stream", type="upstream_error", code="upstream_error")
        lines = self._lines(resp, deadline)
        try:
            async for line in lines:
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    async for _ in lines:  # read to the end: a fully read response returns to the pool
                        pass
                    return
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise ApiError(502, "upstream sent an invalid stream event", type="upstream_error",
                                   code="upstream_error") from None
                if isinstance(chunk, dict) and "error" in chunk:
                    raise _status_error(502, data)
                yield chunk
            raise ApiError(502, "upstream stream ended without [DONE]", type="upstream_error",
                           code="upstream_error")
        except httpx.TimeoutException:
            raise self._timeout() from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise ApiError(502, f"upstream stream broke ({type(exc).__name__})", type="upstream_error",
                           code="upstream_error") from None


class _Retry(Exception):
    def __init__(self, error: ApiError, wait: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait
