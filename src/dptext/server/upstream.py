"""The remote OpenAI-compatible endpoint: async HTTP with a deadline and bounded retries.

The proxy serves many clients at once and streams, so it talks to the
upstream with its own ``httpx.AsyncClient`` (one pooled client per process)
rather than a blocking backend. Only the perturbed payload built by
:mod:`dptext.server.privacy` is ever passed in here.

Failure mapping (the client sees one clear OpenAI-style error, never a hang):

* connection refused / reset / DNS: retried ``retries`` times with
  exponential backoff, then **502** ``upstream_unreachable``;
* HTTP 5xx or 429 from the upstream: retried likewise, then **502**
  ``upstream_error`` naming the upstream status; other 4xx: 502 at once;
* no complete answer within ``timeout_s`` (one attempt's deadline, not
  retried): **504** ``upstream_timeout``; while streaming, the same error is
  sent as a final SSE event.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager

import httpx

from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError

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


class Upstream:
    def __init__(self, cfg: ServerConfig) -> None:
        u = cfg.upstream
        self.cfg = u
        headers = {"authorization": f"Bearer {u.api_key}"} if u.api_key else {}
        self.client = httpx.AsyncClient(
            base_url=u.base_url, headers=headers, trust_env=False,
            timeout=httpx.Timeout(u.timeout_s, connect=u.connect_timeout_s),
            limits=httpx.Limits(max_connections=u.max_connections, max_keepalive_connections=u.max_connections))

    async def aclose(self) -> None:
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
        for attempt in range(self.cfg.retries + 1):
            if attempt:
                await asyncio.sleep(self.cfg.backoff_s * 2 ** (attempt - 1))
            try:
                return await asyncio.wait_for(once(), self.cfg.timeout_s)
            except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
                if isinstance(exc, httpx.ConnectTimeout):
                    last = self._unreachable(exc)
                    continue
                raise self._timeout() from None
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                last = self._unreachable(exc)
            except _Retry as r:
                last = r.error
        raise last

    async def complete(self, payload: dict) -> tuple[dict, float]:
        """Non-streaming chat completion: (upstream JSON, seconds spent upstream)."""
        t0 = time.perf_counter()

        async def once():
            resp = await self.client.post("/chat/completions", json=payload)
            if resp.status_code >= 400:
                err = _status_error(resp.status_code, resp.text)
                if resp.status_code in RETRY_STATUS:
                    raise _Retry(err)
                raise err
            try:
                data = resp.json()
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
        holder = {}

        async def once():
            req = self.client.build_request("POST", "/chat/completions", json=payload)
            resp = await self.client.send(req, stream=True)
            if resp.status_code >= 400:
                text = (await resp.aread()).decode("utf-8", "replace")
                await resp.aclose()
                err = _status_error(resp.status_code, text)
                if resp.status_code in RETRY_STATUS:
                    raise _Retry(err)
                raise err
            holder["resp"] = resp
            return resp

        resp = await self._attempts(once)
        try:
            yield self._chunks(resp)
        finally:
            await resp.aclose()

    async def _chunks(self, resp: httpx.Response):
        try:
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise ApiError(502, "upstream sent an invalid stream event", type="upstream_error",
                                   code="upstream_error") from None
                if isinstance(chunk, dict) and "error" in chunk:
                    raise _status_error(502, data)
                yield chunk
        except httpx.TimeoutException:
            raise self._timeout() from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise ApiError(502, f"upstream stream broke ({type(exc).__name__})", type="upstream_error",
                           code="upstream_error") from None


class _Retry(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error
