"""Single-flight: N concurrent identical private requests through ``dptext serve``; how many perturbations leave?

Usage: python benchmarks/bench_single_flight.py [--clients 10] [--rounds 3] [--before SRC]

A recording upstream on loopback keeps every chat body the proxy forwards. The
proxy (``dptext serve`` in its own process, ``PYTHONPATH`` = this checkout's
``src``; ``--before SRC`` also runs another ``src`` tree, e.g. ``/work/main/src``,
in the same run) gets ``--clients`` identical requests at once, each one user
turn of 40 words, RANTEXT at ε = 3, OS entropy (no seed). Printed per proxy and
round: distinct perturbed texts the upstream saw, and ε charged to the key
(its running total, from the largest ``x-dptext-epsilon-total`` header).
Target (issue 27): 1 distinct perturbation and ε = 3 per round.

``--sdk``: the second experiment of issue 27. 50 background clients keep the
proxy busy with distinct texts while the openai SDK (timeout 0.1 s,
``max_retries`` 2) sends ``--probes`` private texts, one after another; each
probe carries a public system message naming it, so the upstream's copies can
be grouped. Printed: distinct perturbations per probe text that reached the
upstream (target 1), and how many attempts were forwarded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from llama_server import free_port, recording_server, stop_process  # noqa: E402

KEY = "sk-bench-single-flight"
WORDS = ("the patient said that her mother and father live near the river in a small house with two dogs and "
         "a cat she works at the bank every day from nine until five and her brother drives a bus").split()


def start_proxy(src: str, upstream: str, state: str) -> tuple[subprocess.Popen, str]:
    import hashlib

    port = free_port()
    cfg = {"upstream": {"base_url": upstream, "model": "up", "retries": 0},
           "privacy": {"mechanism": "rantext", "epsilon": 3},
           "auth": {"keys": [{"id": "bench", "sha256": hashlib.sha256(KEY.encode()).hexdigest()}]},
           "limits": {"requests_per_minute": 1e6, "burst": 10**6, "perturb_concurrency": 2},
           "state_dir": state, "listen": {"host": "127.0.0.1", "port": port}}
    path = Path(state) / "cfg.json"
    path.write_text(json.dumps(cfg))
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "serve", "--config", str(path)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"proxy exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(url[:-3] + "/healthz", timeout=1, trust_env=False).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("proxy did not start")


def burst(url: str, text: str, clients: int) -> list[httpx.Response]:
    out: list = [None] * clients
    go = threading.Barrier(clients)

    def one(i: int) -> None:
        with httpx.Client(trust_env=False, timeout=120) as c:
            go.wait()
            out[i] = c.post(url + "/chat/completions", headers={"authorization": f"Bearer {KEY}"},
                            json={"model": "x", "messages": [{"role": "user", "content": text}]})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def run(src: str, clients: int, rounds: int) -> list[tuple[int, float, int]]:
    rows = []
    with recording_server(reply="Noted.") as rec, tempfile.TemporaryDirectory() as state:
        proc, url = start_proxy(src, rec.url, state)
        try:
            before_total = 0.0
            for r in range(rounds):
                text = " ".join(WORDS[r:] + WORDS[:r])  # a new text each round
                n0 = len(rec.chat_requests())
                resps = burst(url, text, clients)
                sent = [q["messages"][0]["content"] for q in rec.chat_requests()[n0:]]
                total = max(float(x.headers.get("x-dptext-epsilon-total", 0)) for x in resps)
                ok = sum(x.status_code == 200 for x in resps)
                rows.append((len(set(sent)), total - before_total, ok))
                before_total = total
        finally:
            stop_process(proc)
    return rows


def sdk_run(src: str, probes: int, load: int = 50) -> list[tuple[int, int]]:
    import openai

    with recording_server(reply="Noted.") as rec, tempfile.TemporaryDirectory() as state:
        proc, url = start_proxy(src, rec.url, state)
        stop = threading.Event()

        def background(i: int) -> None:
            with httpx.Client(trust_env=False, timeout=120) as c:
                n = 0
                while not stop.is_set():
                    n += 1
                    text = f"{' '.join(WORDS[i % 20:])} {i} {n}"
                    try:
                        c.post(url + "/chat/completions", headers={"authorization": f"Bearer {KEY}"},
                               json={"model": "x", "messages": [{"role": "user", "content": text}]})
                    except httpx.HTTPError:
                        pass

        threads = [threading.Thread(target=background, args=(i,), daemon=True) for i in range(load)]
        try:
            for t in threads:
                t.start()
            time.sleep(1.0)
            sdk = openai.OpenAI(base_url=url, api_key=KEY, timeout=0.1, max_retries=2)
            for p in range(probes):
                text = " ".join(reversed(WORDS[p:p + 25]))
                try:
                    sdk.chat.completions.create(model="x", messages=[{"role": "system", "content": f"probe {p}"},
                                                                     {"role": "user", "content": text}])
                except openai.APIError:
                    pass
            time.sleep(2.0)  # abandoned attempts still in the proxy get their chance to (not) be forwarded
        finally:
            stop.set()
            for t in threads:
                t.join(10)
            stop_process(proc)
        rows = []
        for p in range(probes):
            got = [q["messages"][1]["content"] for q in rec.chat_requests()
                   if q["messages"][0]["content"] == f"probe {p}"]
            rows.append((len(set(got)), len(got)))
        return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", default=None, help="another src directory to run in the same script")
    ap.add_argument("--sdk", action="store_true", help="also the openai SDK (timeout 0.1 s, 2 retries) under load")
    ap.add_argument("--probes", type=int, default=5)
    ap.add_argument("--load", type=int, default=50, help="background clients beside the SDK")
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    runs = [("before", a.before)] if a.before else []
    runs.append(("this checkout", here))
    print(f"{a.clients} concurrent identical requests per round, RANTEXT eps=3, target: 1 distinct, eps 3")
    for name, src in runs:
        for r, (distinct, eps, ok) in enumerate(run(src, a.clients, a.rounds)):
            print(f"{name:14s} round {r}: {ok}/{a.clients} answered 200, distinct perturbations upstream "
                  f"{distinct}, eps charged {eps:g}")
    if a.sdk:
        print(f"openai SDK, timeout 0.1 s, max_retries 2, beside {a.load} busy clients; target: 1 distinct per text")
        for name, src in runs:
            rows = sdk_run(src, a.probes, a.load)
            print(f"{name:14s} distinct perturbations per text {[d for d, _ in rows]}, "
                  f"attempts forwarded {[n for _, n in rows]}")


if __name__ == "__main__":
    main()
