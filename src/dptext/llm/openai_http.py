"""Chat model behind any OpenAI-compatible HTTP endpoint (OpenAI, vLLM, Ollama, llama.cpp's server).

``POST {base_url}/chat/completions`` with ``httpx``. The API key is read from
an environment variable (default ``OPENAI_API_KEY``; no header when unset, as
local servers need none). Failures that may pass (HTTP 429 and 5xx,
connection errors, timeouts) are retried at most ``max_retries`` times with
exponential backoff ``min(backoff · 2^k, max_backoff)`` (a ``Retry-After``
header is honoured up to ``max_backoff``); when the endpoint stays down a
``DPTextError`` names it. Other HTTP errors fail at once. Error messages never
quote the request body.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

import httpx

from dptext.errors import DPTextError
from dptext.llm.base import Completion, Message, check_generation, check_messages

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def normalize_base_url(url: str) -> str:
    """``http(s)://host[:port][/path]``; a bare host gets the conventional ``/v1``."""
    u = str(url).strip()
    parts = urlsplit(u)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise DPTextError(f"invalid endpoint URL {url!r}: expected http(s)://host[:port][/v1]")
    path = parts.path.rstrip("/")
    for suffix in ("/chat/completions", "/completions"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    if not path:
        path = "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def is_loopback(url: str) -> bool:
    return (urlsplit(str(url)).hostname or "") in LOOPBACK_HOSTS


class OpenAIChat:
    """Chat completions from an OpenAI-compatible endpoint."""

    def __init__(self, base_url: str, model: str | None = None, *, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 120.0, connect_timeout: float = 5.0, max_retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 8.0) -> None:
        self.base_url = normalize_base_url(base_url)
        self.model = model
        self.api_key_env = api_key_env
        if timeout <= 0 or connect_timeout <= 0:
            raise DPTextError("timeouts must be > 0 seconds")
        if int(max_retries) < 0:
            raise DPTextError(f"invalid max_retries {max_retries}: must be >= 0")
        self.timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self.max_retries, self.backoff, self.max_backoff = int(max_retries), float(backoff), float(max_backoff)
        self.is_local = is_loopback(self.base_url)
        self.name = model or self.base_url
        self._client: httpx.Client | None = None

    # ----- plumbing -------------------------------------------------------------------------------
    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout, trust_env=False)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        delay = min(self.backoff * (2 ** attempt), self.max_backoff)
        if response is not None and response.headers.get("retry-after"):
            try:
                delay = min(max(float(response.headers["retry-after"]), 0.0), self.max_backoff)
            except ValueError:
                pass
        return delay

    def _down(self, what: str, attempts: int) -> DPTextError:
        return DPTextError(f"remote endpoint {self.base_url} unavailable after {attempts} attempt(s): {what}")

    def _send(self, method: str, path: str, payload: dict | None = None, stream: bool = False) -> httpx.Response:
        """One request with bounded retries; returns an open response with a 2xx status."""
        url = self.base_url + path
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            response = None
            try:
                req = self.client.build_request(method, url, headers=self._headers(),
                                                content=None if payload is None else json.dumps(payload))
                response = self.client.send(req, stream=stream)
                if response.status_code < 300:
                    return response
                if stream:
                    response.read()
                response.close()
                if response.status_code not in RETRY_STATUS:
                    raise DPTextError(f"remote endpoint {self.base_url} refused the request: "
                                      f"HTTP {response.status_code} {_error_text(response)}")
                last = f"HTTP {response.status_code} {_error_text(response)}".strip()
            except httpx.TimeoutException as exc:
                last = f"timed out ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__}: {exc})"
            if attempt < self.max_retries:
                time.sleep(self._delay(attempt, response))
        raise self._down(last, self.max_retries + 1)

    def resolved_model(self) -> str:
        """The model name to send: the one given, else the endpoint's only model."""
        if self.model:
            return self.model
        r = self._send("GET", "/models")
        try:
            ids = [m["id"] for m in r.json().get("data", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            ids = []
        if len(ids) != 1:
            shown = ", ".join(ids[:8]) + (" ..." if len(ids) > 8 else "")
            raise DPTextError(f"remote endpoint {self.base_url} serves {len(ids)} models ({shown or 'none listed'}); "
                              "name one with --remote-model")
        self.model = self.name = ids[0]
        return self.model

    def _payload(self, messages, max_tokens, temperature, stop, seed, stream: bool) -> dict:
        msgs = check_messages(messages)
        mt, t, stops = check_generation(max_tokens, temperature, stop)
        p = {"model": self.resolved_model(), "messages": msgs, "max_tokens": mt, "temperature": t,
             "stream": stream}
        if stops:
            p["stop"] = stops
        if seed is not None:
            p["seed"] = int(seed)
        return p

    # ----- the protocol ---------------------------------------------------------------------------
    def describe(self) -> dict:
        return {"backend": "openai-http", "model": self.model, "base_url": self.base_url,
                "location": "loopback (this machine)" if self.is_local else "remote endpoint"}

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7,
                 stop: Sequence[str] | None = None, seed: int | None = None) -> Completion:
        payload = self._payload(messages, max_tokens, temperature, stop, seed, stream=False)
        r = self._send("POST", "/chat/completions", payload)
        try:
            data = r.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise DPTextError(f"remote endpoint {self.base_url} sent a reply that is not a chat completion") from None
        usage = data.get("usage") or {}
        return Completion(text=text, model=str(data.get("model") or payload["model"]),
                          finish_reason=choice.get("finish_reason"), prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"))

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7,
               stop: Sequence[str] | None = None, seed: int | None = None) -> Iterator[str]:
        payload = self._payload(messages, max_tokens, temperature, stop, seed, stream=True)
        r = self._send("POST", "/chat/completions", payload, stream=True)
        try:
            for line in r.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    piece = json.loads(data)["choices"][0].get("delta", {}).get("content")
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    raise DPTextError(f"remote endpoint {self.base_url} sent a malformed stream event") from None
                if piece:
                    yield piece
        except httpx.HTTPError as exc:
            raise DPTextError(f"remote endpoint {self.base_url} broke off the stream: {type(exc).__name__}") from None
        finally:
            r.close()

    def __repr__(self) -> str:
        return f"OpenAIChat({self.base_url!r}, model={self.model!r})"


def _error_text(response: httpx.Response) -> str:
    """A short reason from an error reply (its JSON ``error.message`` or the start of the body)."""
    try:
        body = response.json()
        msg = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(msg, dict):
            msg = msg.get("message") or msg.get("detail") or ""
        text = str(msg)
    except ValueError:
        text = response.text
    text = " ".join(text.split())
    return text[:160]
