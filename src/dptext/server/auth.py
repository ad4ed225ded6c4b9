"""Bearer keys stored as sha256 hashes, and a per-key token-bucket rate limit.

The config holds ``sha256(key)`` in hex, never the key. A request's bearer
token is hashed and compared in constant time against every stored hash, so
timing does not reveal how many leading characters matched. Keys are
generated and hashed with ``dptext hash-key``.

Rate limit: a token bucket per key id with capacity ``burst`` refilled at
``requests_per_minute / 60`` tokens per second; a request costs one token,
and an empty bucket answers 429 with the seconds until the next token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time

from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError

ANONYMOUS = "anonymous"


def hash_key(key: str) -> str:
    """Hex sha256 of a bearer key, as stored in ``auth.keys[].sha256``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random bearer key (256 bits, URL-safe)."""
    return "dpt-" + secrets.token_urlsafe(32)


class KeyStore:
    def __init__(self, cfg: ServerConfig) -> None:
        self.keys = [(k.id, bytes.fromhex(k.sha256)) for k in cfg.auth.keys]
        self.anonymous = cfg.auth.allow_anonymous

    def identify(self, authorization: str | None) -> str:
        """Key id for an ``Authorization`` header value; raises a 401 ApiError otherwise."""
        if not authorization:
            if self.anonymous:
                return ANONYMOUS
            raise ApiError(401, "missing API key: send 'Authorization: Bearer <key>'",
                           type="invalid_request_error", code="missing_api_key")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "malformed Authorization header: expected 'Bearer <key>'",
                           type="invalid_request_error", code="invalid_api_key")
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        found = None
        for key_id, stored in self.keys:  # no early exit: constant work per request
            if hmac.compare_digest(digest, stored):
                found = key_id
        if found is None:
            raise ApiError(401, "invalid API key", type="invalid_request_error", code="invalid_api_key")
        return found


class RateLimiter:
    """Token buckets per key id (thread-safe; time from ``time.monotonic``)."""

    def __init__(self, cfg: ServerConfig, clock=time.monotonic) -> None:
        self.clock = clock
        self.params: dict[str, tuple[float, float]] = {}
        default = (cfg.limits.requests_per_minute / 60.0, float(cfg.limits.burst))
        for k in cfg.auth.keys:
            rate = (k.requests_per_minute / 60.0) if k.requests_per_minute else default[0]
            self.params[k.id] = (rate, float(k.burst or cfg.limits.burst))
        self.default = default
        self.buckets: dict[str, tuple[float, float]] = {}  # id -> (tokens, last time)
        self.lock = threading.Lock()

    def check(self, key_id: str) -> None:
        rate, cap = self.params.get(key_id, self.default)
        with self.lock:
            now = self.clock()
            tokens, last = self.buckets.get(key_id, (cap, now))
            tokens = min(cap, tokens + (now - last) * rate)
            if tokens < 1.0:
                self.buckets[key_id] = (tokens, now)
                wait = (1.0 - tokens) / rate
                raise ApiError(429, f"rate limit exceeded for key '{key_id}'; retry in {wait:.1f} s",
                               type="rate_limit_error", code="rate_limit_exceeded",
                               headers={"retry-after": str(max(1, int(wait + 0.999)))})
            self.buckets[key_id] = (tokens - 1.0, now)
