"""The proxy's HTTP/1.1 upstream client against real loopback servers, each answering in one wire form.

Every server here is a scripted asyncio TCP server: it reads one request (head and ``content-length`` body),
records it, and writes the bytes the test asks for, so each framing rule of the client meets real bytes.
"""

import asyncio
import gzip
import json

import pytest
from llama_server import free_port, recording_server

from dptext.errors import DPTextError
from dptext.server import config_from_dict
from dptext.server.errors import ApiError
from dptext.server.http1 import ConnectFailed, ConnectionBroken, Pool
from dptext.server.upstream import Upstream

OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}}]}


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    n = int([ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")][0].split(b":")[1])
    return head, await reader.readexactly(n)


def scripted(answers):
    """A server answering the i-th request on any connection with ``answers[i](writer)`` bytes; records peers."""
    seen = []

    async def handle(reader, writer):
        try:
            while True:
                head, body = await read_request(reader)
                i = len(seen)
                seen.append((writer.get_extra_info("peername")[1], head, body))
                out, close = answers[min(i, len(answers) - 1)]
                writer.write(out)
                await writer.drain()
                if close:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return handle, seen


def length_body(payload: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        len(payload), extra, payload)


async def with_server(answers, fn):
    handle, seen = scripted(answers)
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = Pool(f"http://127.0.0.1:{port}/v1", {"authorization": "Bearer k"}, connect_timeout_s=5, max_connections=4)
    try:
        return await fn(pool), seen
    finally:
        await pool.aclose()
        server.close()


def test_keep_alive_reuses_one_connection_and_sends_the_body_once():
    body = json.dumps(OK).encode()

    async def three(pool):
        return [await pool.request("POST", "/chat/completions", b'{"n": %d}' % i) for i in range(3)]

    got, seen = asyncio.run(with_server([(length_body(body), False)], three))
    assert [r.status_code for r in got] == [200, 200, 200] and all(json.loads(r.content) == OK for r in got)
    assert len({peer for peer, _, _ in seen}) == 1  # one TCP connection for all three
    assert [b for _, _, b in seen] == [b'{"n": 0}', b'{"n": 1}', b'{"n": 2}']
    head = seen[0][1].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n") and "authorization: Bearer k" in head


def test_chunked_gzip_and_interim_responses_are_decoded():
    payload = json.dumps(OK).encode()
    chunked = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
               + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(payload[i:i + 7]), payload[i:i + 7])
                          for i in range(0, len(payload), 7)) + b"0\r\nx-trailer: 1\r\n\r\n")
    zipped = gzip.compress(payload)
    answers = [(chunked, False), (length_body(zipped, b"content-encoding: gzip\r\n"), False)]

    async def two(pool):
        return [await pool.request("POST", "/chat/completions", b"{}") for _ in range(2)]

    got, seen = asyncio.run(with_server(answers, two))
    assert [json.loads(r.content) for r in got] == [OK, OK]
    assert len({peer for peer, _, _ in seen}) == 1  # the chunked body was read to its end: the connection is reused


def test_connection_close_and_a_stale_pooled_connection_get_a_fresh_connection():
    payload = json.dumps(OK).encode()
    # 1st: answered, then closed by "connection: close"; 2nd: answered and the server closes while idle
    answers = [(length_body(payload, b"connection: close\r\n"), True), (length_body(payload), True),
               (length_body(payload), False)]

    async def three(pool):
        out = []
        for _ in range(3):
            out.append(await pool.request("POST", "/chat/completions", b"{}"))
            await asyncio.sleep(0.05)  # the server's close reaches the client while the connection is idle
        return out

    got, seen = asyncio.run(with_server(answers, three))
    assert [r.status_code for r in got] == [200, 200, 200]
    assert len(seen) == 3 and len({peer for peer, _, _ in seen}) == 3


def test_a_pooled_connection_closed_by_the_server_is_retried_once_on_a_fresh_one():
    """The server reads the 2nd request on the kept-alive connection and closes it without a byte."""
    payload = json.dumps(OK).encode()
    answers = [(length_body(payload), False), (b"", True), (length_body(payload), False)]

    async def two(pool):
        return [await pool.request("POST", "/chat/completions", b'{"n": %d}' % i) for i in range(2)]

    got, seen = asyncio.run(with_server(answers, two))
    assert [r.status_code for r in got] == [200, 200]
    assert [b for _, _, b in seen] == [b'{"n": 0}', b'{"n": 1}', b'{"n": 1}']
    assert seen[0][0] == seen[1][0] != seen[2][0]


def test_broken_responses_raise_and_the_connection_is_not_reused():
    async def one(pool):
        with pytest.raises(ConnectionBroken):
            await pool.request("POST", "/chat/completions", b"{}")
        return len(pool.idle)

    for bad in (b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort", b"garbage\r\n\r\n",
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"):
        idle, _ = asyncio.run(with_server([(bad, True)], one))
        assert idle == 0


def test_refused_connection_and_bad_settings():
    async def refused():
        pool = Pool(f"http://127.0.0.1:{free_port()}/v1", {}, connect_timeout_s=2, max_connections=1)
        with pytest.raises(ConnectFailed):
            await pool.request("POST", "/chat/completions", b"{}")

    asyncio.run(refused())
    with pytest.raises(DPTextError, match="credentials"):
        Pool("http://user:pw@127.0.0.1:1/v1", {}, connect_timeout_s=1, max_connections=1)
    with pytest.raises(DPTextError, match="line break"):
        Pool("http://127.0.0.1:1/v1", {"authorization": "Bearer a\r\nx-evil: 1"}, connect_timeout_s=1,
             max_connections=1)


def test_upstream_maps_the_client_errors_to_openai_errors():
    """Through :class:`Upstream`: a real HTTP/1.1 server (keep-alive), a 503 retried then 502, a refused port."""
    def upstream(url, retries=0):
        return Upstream(config_from_dict({"upstream": {"base_url": url, "model": "m", "retries": retries,
                                                       "backoff_s": 0.01}, "auth": {"allow_anonymous": True}}))

    async def calls(url, n, retries=0):
        up = upstream(url, retries)
        try:
            return [(await up.complete({"model": "m", "messages": [{"role": "user", "content": "é"}]}))[0]
                    for _ in range(n)]
        finally:
            await up.aclose()

    with recording_server(reply="Noted.") as rec:
        got = asyncio.run(calls(rec.url, 3))
        assert [d["choices"][0]["message"]["content"] for d in got] == ["Noted."] * 3
        assert len(set(rec.peers())) == 1 and rec.chat_requests()[0]["messages"][0]["content"] == "é"
    with recording_server(status=503) as rec:
        with pytest.raises(ApiError) as e:
            asyncio.run(calls(rec.url, 1, retries=1))
        assert e.value.status == 502 and e.value.code == "upstream_error" and len(rec.chat_requests()) == 2
    with pytest.raises(ApiError) as e:
        asyncio.run(calls(f"http://127.0.0.1:{free_port()}/v1", 1, retries=1))
    assert e.value.status == 502 and e.value.code == "upstream_unreachable"
