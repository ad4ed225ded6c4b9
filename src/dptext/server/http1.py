"""A small HTTP/1.1 client for the proxy's non-streaming upstream calls: pooled keep-alive connections.

Why not httpx here: on this 2-core machine one ``httpx.AsyncClient.post`` to a
loopback server costs about 1.8 ms of CPU and 5.6 ms of wall time, against
0.12 ms and 0.6 ms for the same exchange written on asyncio streams
(``benchmarks/bench_server.py`` prints the proxy's CPU per request). Streams
(SSE relays) still use httpx (:mod:`dptext.server.upstream`).

What it speaks: ``POST``/``GET`` with a body of known length; responses with
``Content-Length``, ``Transfer-Encoding: chunked`` or read-to-close; 1xx
interim responses skipped; ``gzip``/``deflate`` bodies decoded (``identity`` is
asked for). A connection goes back to the pool only after a complete response
that did not say ``Connection: close``; one that is cancelled or fails mid-way
is closed. A reused connection that the server had closed while idle (EOF or
reset before any response byte) is retried once on a fresh connection, as
httpcore does; any other failure is raised, never retried here.

Errors: :class:`ConnectFailed` (refused, DNS, connect timeout) and
:class:`ConnectionBroken` (reset, early EOF, malformed response).
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections import deque
from urllib.parse import urlsplit

from dptext.errors import DPTextError

MAX_HEAD = 1 << 16  # status line + headers


class HttpError(Exception):
    pass


class ConnectFailed(HttpError):
    pass


class ConnectionBroken(HttpError):
    pass


class _Stale(Exception):
    """The peer closed a pooled connection before sending any byte of the response."""


class Response:
    __slots__ = ("status_code", "headers", "content")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def _ssl_context() -> ssl.SSLContext:
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())  # the same trust store as httpx
    except ModuleNotFoundError:
        return ssl.create_default_context()


class Pool:
    """Keep-alive connections to one origin, at most ``max_connections`` in use at once."""

    def __init__(self, base_url: str, headers: dict[str, str], *, connect_timeout_s: float,
                 max_connections: int) -> None:
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise DPTextError(f"config upstream.base_url: {base_url!r} is not an http(s) URL")
        if u.username or u.password:
            raise DPTextError("config upstream.base_url: credentials in the URL are not supported; "
                              "use upstream.api_key")
        self.host, self.tls = u.hostname, u.scheme == "https"
        self.port = u.port or (443 if self.tls else 80)
        self.prefix = u.path.rstrip("/")
        self.ssl = _ssl_context() if self.tls else None
        fixed = {"host": u.netloc, "accept": "application/json", "accept-encoding": "identity",
                 "user-agent": "dptext-proxy", **headers}
        for k, v in fixed.items():
            if any(c in f"{k}{v}" for c in "\r\n\0"):
                raise DPTextError(f"config upstream: header {k!r} holds a line break")
        self.head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self.connect_timeout_s = connect_timeout_s
        self.slots = asyncio.Semaphore(max_connections)
        self.idle: deque[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = deque()

    async def request(self, method: str, path: str, body: bytes = b"",
                      content_type: str = "application/json") -> Response:
        head = (f"{method} {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self.head
                + f"content-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n".encode("latin-1"))
        async with self.slots:
            conn = self._take()
            if conn is not None:
                try:
                    return await self._exchange(conn, head + body, reused=True)
                except _Stale:
                    pass
            return await self._exchange(await self._connect(), head + body, reused=False)

    def _take(self):
        while self.idle:
            reader, writer = self.idle.pop()  # the most recently used: the least likely to have timed out
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    async def _connect(self):
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                return await asyncio.open_connection(self.host, self.port, ssl=self.ssl, limit=MAX_HEAD,
                                                     server_hostname=self.host if self.tls else None)
        except TimeoutError:
            raise ConnectFailed("ConnectTimeout") from None
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(type(exc).__name__) from None

    async def _exchange(self, conn, data: bytes, *, reused: bool) -> Response:
        reader, writer = conn
        done = False
        try:
            writer.write(data)
            try:
                status, headers, keep = await self._head(reader)
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as exc:
                if reused and not getattr(exc, "partial", b""):
                    raise _Stale() from None
                raise
            body, keep = await self._body(reader, status, headers, keep)
            done = True
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError) as exc:
            raise ConnectionBroken(type(exc).__name__) from None
        finally:
            if done and keep:
                self.idle.append(conn)
            else:
                writer.close()
        enc = headers.get("content-encoding", "identity").lower()
        if enc in ("gzip", "deflate"):
            try:
                body = zlib.decompress(body, 31 if enc == "gzip" else 15)
            except zlib.error:
                raise ConnectionBroken("bad content-encoding") from None
        elif enc != "identity":
            raise ConnectionBroken(f"unsupported content-encoding {enc!r}")
        return Response(status, headers, body)

    async def _head(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bool]:
        while True:
            raw = await reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            status = int(rest[:3])
            if not version.startswith("HTTP/1.") or not 100 <= status <= 599:
                raise ValueError("not an HTTP/1.x response")
            if status >= 200 or status == 101:
                break  # 1xx interim responses (100 Continue, 103) are skipped
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                k, sep, v = line.partition(":")
                if not sep:
                    raise ValueError("malformed header line")
                headers[k.strip().lower()] = v.strip()
        conn = headers.get("connection", "").lower()
        keep = "close" not in conn and (version == "HTTP/1.1" or "keep-alive" in conn)
        return status, headers, keep

    async def _body(self, reader, status: int, headers: dict[str, str], keep: bool) -> tuple[bytes, bool]:
        if status in (204, 304):
            return b"", keep
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
                if size == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                        pass
                    return b"".join(parts), keep
                parts.append(await reader.readexactly(size))
                if await reader.readexactly(2) != b"\r\n":
                    raise ValueError("malformed chunk")
        length = headers.get("content-length")
        if length is not None:
            n = int(length)
            if n < 0:
                raise ValueError("negative content-length")
            return await reader.readexactly(n), keep
        return await reader.read(), False  # no length: the body ends when the server closes

    async def aclose(self) -> None:
        while self.idle:
            _, writer = self.idle.pop()
            writer.close()
