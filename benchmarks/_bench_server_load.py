"""The load side of benchmarks/bench_server.py: the mock upstream, the proxy processes and the clients.

A mock OpenAI-compatible provider answering at once (an ASGI app under uvicorn in its own process),
``dptext serve`` started from a given ``src`` tree (optionally under cProfile), the fixed-seed 100-word
prompts, and one load level: ``clients`` asyncio + httpx clients (one connection each) sending their
share of the requests, with client latencies, the proxy's ``server-timing`` and its CPU from ``/proc``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # llama_server: free ports, stopping processes
KEY = "sk-bench"
SYSTEM = "You are a terse assistant. Reply in one word."
VOCAB = ("the patient doctor hospital river house mother father sister brother city bank works lives near small "
         "large with from after before every morning evening pills blood pressure heart pain week year month "
         "school teacher car bus train station street road garden dog cat friend neighbour money account "
         "card phone number address letter report test result clinic nurse visit appointment today tomorrow "
         "yesterday old young new good bad happy sad tired worried family children husband wife job office "
         "manager meeting project holiday trip summer winter rain snow water food bread coffee tea").split()
MOCK = '''
import json
REPLY = json.dumps({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "mock",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}, "logprobs": None,
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}}).encode()
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(REPLY)).encode())]})
    await send({"type": "http.response.body", "body": REPLY})
'''


def wait_up(url: str, proc: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited: {log.read_text()[-800:]}")
        try:
            if httpx.get(url, timeout=2, trust_env=False).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start within 180 s")
        time.sleep(0.2)


PROFILED = '''
import cProfile, signal, sys
from dptext.cli import main
def stop(*_):  # uvicorn re-raises SIGTERM after its graceful shutdown: end here so the profile is written
    raise SystemExit(0)
signal.signal(signal.SIGTERM, stop)
prof = cProfile.Profile()
prof.enable()
try:
    main(sys.argv[2:])
finally:
    prof.disable()
    prof.dump_stats(sys.argv[1])
'''


def start(stack: ExitStack, cmd: list[str], env: dict, url: str, what: str, tmp: Path) -> subprocess.Popen:
    from llama_server import stop_process

    log = tmp / f"{what}.log"
    out = stack.enter_context(open(log, "wb"))
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **env}, cwd=tmp)
    stack.callback(stop_process, proc, 60)
    wait_up(url, proc, log, what)
    return proc


def start_mock(stack: ExitStack, tmp: Path) -> str:
    from llama_server import free_port

    (tmp / "mock_upstream.py").write_text(MOCK)
    port = free_port()
    start(stack, [sys.executable, "-m", "uvicorn", "mock_upstream:app", "--port", str(port), "--log-level",
                  "warning", "--no-access-log"], {}, f"http://127.0.0.1:{port}/v1/models", "mock", tmp)
    return f"http://127.0.0.1:{port}/v1"


def start_proxy(stack: ExitStack, tmp: Path, upstream: str, epsilon: float, src: Path, name: str,
                current: bool, profile: bool = False, process: bool = False) -> tuple[str, int]:
    from llama_server import free_port

    from dptext.server import hash_key

    cfg = {"upstream": {"base_url": upstream, "model": "mock", "timeout_s": 600, "retries": 0,
                        "max_connections": 128},
           "privacy": {"mechanism": "rantext", "epsilon": epsilon},
           "auth": {"keys": [{"id": "bench", "sha256": hash_key(KEY)}]},
           "limits": {"requests_per_minute": 1e9, "burst": 10**9}, "log_level": "info"}
    if current:
        cfg["state_dir"] = str(tmp / f"state-{name}")
        cfg["limits"]["max_queue"] = 256
    if process:  # perturbation, memo and ledger in a child process (its CPU is counted with the server's)
        cfg["limits"]["perturb_process"] = True
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    port = free_port()
    cmd = [sys.executable, "-m", "dptext.cli", "serve", "--config", str(path), "--port", str(port)]
    if profile:  # the event loop's thread, dumped when uvicorn has shut down
        (tmp / "profiled.py").write_text(PROFILED)
        cmd = [sys.executable, str(tmp / "profiled.py"), str(tmp / "proxy.prof"), *cmd[3:]]
    env = {"PYTHONPATH": str(src)}  # the shared space cache ($DPTEXT_CACHE_DIR or ~/.cache/dptext)
    proc = start(stack, cmd, env, f"http://127.0.0.1:{port}/healthz", name, tmp)
    return f"http://127.0.0.1:{port}/v1", proc.pid


def prompts(n: int, seed: int = 7) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        text = " ".join(rng.choice(VOCAB, size=100))
        out.append(json.dumps({"model": "x", "max_tokens": 1, "temperature": 0, "messages": [
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]}).encode())
    return out


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds so far of process ``pid`` and its live child processes (the perturbation
    process of ``limits.perturb_process``), from ``/proc``; 0 without a pid."""
    return sum(cpu_split(pid))


def cpu_split(pid: int | None) -> tuple[float, float]:
    """``(pid's own CPU seconds, its live child processes' CPU seconds)``."""
    if pid is None:
        return 0.0, 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += (task / "children").read_text().split()
    return own, sum(cpu_seconds(int(k)) for k in kids)


def server_timing(value: str | None) -> dict[str, float]:
    """``name;dur=ms, ...`` as {name: ms}."""
    out = {}
    for part in (value or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur)
    return out


async def run_level(url: str, clients: int, total: int, bodies, pid: int | None = None) -> dict:
    """``bodies``: an iterator of request bodies, each used once (the memo never replays one)."""
    per_client = max(1, total // clients)
    lat: list[float] = []
    timings: list[dict] = []
    errors = 0
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}

    async def worker(c: httpx.AsyncClient, n: int, keep: bool):
        nonlocal errors
        for _ in range(n):
            body = next(bodies)
            t = time.perf_counter()
            r = await c.post(url + "/chat/completions", content=body, headers=headers)
            dt = time.perf_counter() - t
            if r.status_code != 200:
                errors += 1
            elif keep:
                lat.append(dt)
                timings.append(server_timing(r.headers.get("server-timing")))

    conns = [httpx.AsyncClient(timeout=600, trust_env=False) for _ in range(clients)]
    try:
        await asyncio.gather(*[worker(c, 2, False) for c in conns])  # open every connection, warm caches
        cpu0, t0 = cpu_split(pid), time.perf_counter()
        await asyncio.gather(*[worker(c, per_client, True) for c in conns])
        cpu1, wall = cpu_split(pid), time.perf_counter() - t0
        cpu, kids = sum(cpu1) - sum(cpu0), cpu1[1] - cpu0[1]
    finally:
        for c in conns:
            await c.aclose()
    a = np.array(lat) * 1000 if lat else np.zeros(1)
    row = {"clients": clients, "requests": len(lat), "errors": errors, "req_per_s": round(len(lat) / wall, 1),
           "p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
           "p99_ms": round(float(np.percentile(a, 99)), 2)}
    if pid is not None:
        row["proxy_cpu_ms_per_req"] = round(cpu / max(1, len(lat)) * 1000, 2)
        if kids:  # of which the perturbation process (limits.perturb_process)
            row["child_cpu_ms_per_req"] = round(kids / max(1, len(lat)) * 1000, 2)
        for name in ("perturb", "queue"):
            got = [t[name] for t in timings if name in t]
            row[f"{name}_p50_ms"] = round(float(np.median(got)), 2) if got else 0.0
    return row
