"""Real HTTP parts on loopback for tests (import as ``from llama_server import ...``).

* ``llama_server()``: runs ``python -m llama_cpp.server`` with a GGUF model
  (default SmolLM2) on a free 127.0.0.1 port, waits (bounded) until
  ``/v1/models`` answers, yields the base URL ``http://127.0.0.1:PORT/v1``
  and always terminates the process.
* ``recording_server(upstream=..., status=..., delay=..., reply=...)``: a tiny
  HTTP/1.1 server on loopback that records every request it receives (method,
  path, headers, raw body, client port) and the reply it gave (status, raw
  body). It forwards to ``upstream`` (a recording reverse proxy), answers with
  a fixed HTTP ``status`` (and ``headers``), or, with ``reply``, answers as a
  chat model whose answer is that text: a chat completion, or an SSE stream
  sent with chunked encoding when the request asks for one (``trickle``
  seconds between its events). ``delay`` sleeps before answering. This is the
  receiving side that tests inspect to see what a backend really sent.
* ``free_port()``: a loopback port with nothing listening (for "server down").

The server gets the AMX crash workaround of ``dptext.llm.llamacpp`` (see that
module: ``server_safety_args``, and ``disable_extra_buffers`` under
``DPTEXT_LLAMA_AMX=nobufts``); ``runpy`` runs ``llama_cpp.server`` exactly
as ``python -m`` would.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

import httpx

LAUNCH = ("import runpy, sys; from dptext.llm.llamacpp import disable_extra_buffers; disable_extra_buffers(); "
          "sys.argv[0] = 'llama_cpp.server'; runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def llama_server(model: str | None = None, *, n_ctx: int = 2048, n_threads: int | None = None,
                 startup_timeout: float = 180.0, extra_args: tuple[str, ...] = ()):
    """Run llama.cpp's OpenAI-compatible server on loopback; yields ``http://127.0.0.1:PORT/v1``."""
    from dptext.llm.llamacpp import default_threads, resolve_model, server_safety_args

    path = resolve_model(model)
    port = free_port()
    cmd = [sys.executable, "-c", LAUNCH, "--model", path, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", str(n_threads or default_threads()), "--verbose", "False",
           *server_safety_args(), *extra_args]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {proc.returncode} during start-up: {_tail(log)}")
            try:
                if httpx.get(base + "/models", timeout=2.0, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within {startup_timeout:.0f}s: {_tail(log)}")
            time.sleep(0.25)
        yield base
    finally:
        stop_process(proc, timeout=10)
        log.close()


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate ``proc``, killing it if it has not exited within ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def _tail(log, n: int = 800) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", "replace")[-n:]


class Recorder:
    """What a :func:`recording_server` received, plus its base URL."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.url = ""

    def add(self, method: str, path: str, body: bytes, headers: dict, peer: int = 0) -> dict:
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        entry = {"method": method, "path": path, "body": body, "json": parsed, "headers": headers,
                 "status": None, "response": b"", "peer": peer}
        with self.lock:
            self.requests.append(entry)
        return entry

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [r["body"] for r in self.requests]

    def chat_requests(self) -> list[dict]:
        with self.lock:
            return [r["json"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def peers(self) -> list[int]:
        """Client port of each request: one port per TCP connection the proxy opened."""
        with self.lock:
            return [r["peer"] for r in self.requests]


def completion(text: str, model: str = "upstream-model") -> dict:
    return {"id": "chatcmpl-rec", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def stream_events(text: str, model: str = "upstream-model") -> list[bytes]:
    def ev(delta, finish=None):
        return ("data: " + json.dumps({"id": "chatcmpl-rec", "object": "chat.completion.chunk", "created": 0,
                                       "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                                    "finish_reason": finish}]}) + "\n\n").encode()
    words = text.split(" ")
    return ([ev({"role": "assistant", "content": ""})] + [ev({"content": (" " if i else "") + w})
                                                         for i, w in enumerate(words)]
            + [ev({}, "stop"), b"data: [DONE]\n\n"])


@contextmanager
def recording_server(*, upstream: str | None = None, status: int | None = None, delay: float = 0.0,
                     reply: str | None = None, headers: dict | None = None, trickle: float = 0.0):
    """Loopback HTTP server recording each request; forwards to ``upstream``, answers ``status`` or ``reply``.

    Yields a :class:`Recorder` whose ``url`` is ``http://127.0.0.1:PORT/v1``.
    """
    rec = Recorder()
    up = upstream.rstrip("/") if upstream else None
    if up and up.endswith("/v1"):
        up = up[:-3]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep test output clean
            pass

        def _handle(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            entry = rec.add(self.command, self.path, body, {k.lower(): v for k, v in self.headers.items()},
                            self.client_address[1])
            if delay:
                time.sleep(delay)
            if reply is not None and status is None and (entry["json"] or {}).get("stream"):
                return self._stream(entry)
            if reply is not None and status is None:
                code, payload, ctype = 200, json.dumps(completion(reply)).encode(), "application/json"
            elif up is not None:
                fwd = {k: v for k, v in self.headers.items()
                       if k.lower() in ("content-type", "authorization", "accept")}
                r = httpx.request(self.command, up + self.path, content=body or None, headers=fwd,
                                  timeout=600, trust_env=False)
                code, payload, ctype = r.status_code, r.content, r.headers.get("content-type", "application/json")
            else:
                code = status or 200
                payload = json.dumps({"error": {"message": f"test server answers {code}"}}).encode()
                ctype = "application/json"
            entry["status"], entry["response"] = code, payload
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _stream(self, entry):
            entry["status"] = 200
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for ev in stream_events(reply):
                    if trickle:
                        time.sleep(trickle)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                    self.wfile.flush()
                    entry["response"] += ev
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        do_GET = do_POST = _handle

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    rec.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def serve_app(app, timeout: float = 60.0):
    """Run an ASGI app under uvicorn in a thread on a free loopback port; yields ``http://127.0.0.1:PORT/v1``."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
