"""Privacy proxy overhead: the same client against the upstream directly and through ``dptext serve``.

Usage: python benchmarks/bench_server.py [--requests 200] [--levels 1,10,50] [--epsilon 3]
                                         [--before SRC] [--profile] [--json]

Measured the way LiteLLM states its overhead: a mock provider answering at
once (a small ASGI app under uvicorn, in its own process), the same asyncio +
httpx client (one connection per simulated user) sending to it directly and
through the proxy, at 1, 10 and 50 concurrent clients. Every request carries a
different 100-word private user message (drawn from a fixed word list with a
fixed seed), perturbed by RANTEXT at ε (default 3) in ``mode: perturb``, so the
memo never replays and every request does the full perturbation work.

Per level: requests/s, client latency p50 / p95 / p99, and for the proxy the
added p50 (proxy p50 - direct p50), throughput as a share of direct, and the
proxy process's CPU milliseconds per request (``/proc``). The split table
divides each added p50 into the mechanism (median ``perturb`` of the proxy's
``server-timing`` header: time inside the core), waiting for the perturbation
slot (``queue``) and the rest (HTTP in and out, parsing, the upstream hop,
accounting, logging). ``--before SRC`` also runs another proxy in the same run:
``SRC`` is a ``src`` directory (e.g. ``/work/main/src``) or a git revision
(its ``src`` tree from ``git archive``); an older proxy without ``queue``
timing counts the wait inside ``perturb``. ``--profile`` runs the current proxy
under cProfile (its event-loop thread) at the largest level and prints its top
functions by own time. The floor lines: the core alone (``Sanitizer.sanitize``
in this process, warm) per prompt, wall and CPU, which bounds the added
latency from below and, with one perturbation slot, the proxy's throughput
from above; and the proxy's own steps in process, CPU per request.

The current proxy ("after") runs with ``limits.perturb_process: true``
(perturbation, memo and ledger in a child process; its CPU is counted with
the server's) unless ``--no-process``; the same proxy is also run without it
(as "threads"), in the same run, unless ``--no-threads``.

Targets (issue "Model-bound speed"): added p50 <= 3 ms at 1 client; at 50
clients, throughput >= 80 % of direct and added p50 <= 10 ms. Batched
perturbation (issue 27): with ``--before`` the proxy before batching (e.g.
``--before /work/main/src``), at the largest level throughput >= 2x the
before proxy's and added p50 <= 50 ms; the last line says whether both hold.
The machine's load average is printed beside the table: numbers from a
shared machine move. The mock upstream, the proxy processes and the client
load are in ``_bench_server_load.py``; the in-process measures are here.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_server_load import KEY, prompts, run_level, start_mock, start_proxy  # noqa: E402
from _revisions import archive_src  # noqa: E402


def perturb_floor(epsilon: float, bodies: list[bytes], n: int = 100) -> tuple[float, float]:
    """Wall and CPU milliseconds per prompt of the core alone (``Sanitizer.sanitize``, warm, one thread).

    One perturbation slot serves requests one after another, so ``1000 / floor`` requests/s is also the
    ceiling of the proxy's throughput for these prompts on this machine.
    """
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.pipeline import Sanitizer, Segment

    s = Sanitizer(MechanismSpec(mechanism="rantext", epsilon=epsilon))
    texts = [json.loads(b)["messages"][1]["content"] for b in bodies[:n + 20]]
    for t in texts[:20]:
        s.sanitize([Segment(t, True)])
    t0, c0 = time.perf_counter(), time.thread_time()
    for t in texts[20:20 + n]:
        s.sanitize([Segment(t, True)])
    return (time.perf_counter() - t0) / n * 1000, (time.thread_time() - c0) / n * 1000


def breakdown(epsilon: float, bodies: list[bytes], tmp: Path, n: int = 100) -> dict[str, float]:
    """CPU milliseconds per request of each step of the proxy's path, run in this thread (no sockets)."""
    import logging

    from starlette.responses import JSONResponse

    from dptext.server import config_from_dict, hash_key
    from dptext.server.request import decode_body, parse_request
    from dptext.server.scheduler import ungated
    from dptext.server.services import Services

    cfg = config_from_dict({"upstream": {"base_url": "http://127.0.0.1:9/v1", "model": "mock"},
                            "privacy": {"mechanism": "rantext", "epsilon": epsilon}, "state_dir": str(tmp / "bd"),
                            "auth": {"keys": [{"id": "bench", "sha256": hash_key(KEY)}]}})
    svc = Services.build(cfg)
    log = logging.getLogger("bench.breakdown")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    log.setLevel(logging.INFO)
    reply = {"id": "x", "object": "chat.completion", "model": "mock",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}}]}
    steps = dict.fromkeys(("json + parse", "perturb (core and memo)", "accounting + memo commit",
                           "upstream payload json", "response json + header", "log line"), 0.0)
    for b in bodies[-20:]:
        svc.perturber.perturb(ungated, parse_request(decode_body(b), cfg), "warm")
    for b in bodies[:n]:
        t0 = time.thread_time()
        req = parse_request(decode_body(b), cfg)
        t1 = time.thread_time()
        p = svc.perturber.perturb(ungated, req, "bench")
        t2 = time.thread_time()
        svc.accountant.charge("bench", p.report["epsilon_spent"] or 0.0)
        p.memo.commit()
        t3 = time.thread_time()
        json.dumps({"model": "mock", "messages": p.messages, **req.params}, ensure_ascii=False).encode()
        t4 = time.thread_time()
        JSONResponse({**reply, "dptext": p.report})
        p.header()
        t5 = time.thread_time()
        log.info("request id=%s key=%s status=%s code=%s bytes=%d messages=%d private_chars=%d", "dpt-x", "bench",
                 200, "-", len(b), 2, 600)
        t6 = time.thread_time()
        for k, dt in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
            steps[k] += dt * 1000 / n
    return steps


def batched_core(epsilon: float, bodies: list[bytes], tmp: Path, threads: int = 50, n: int = 600) -> dict:
    """In process, no sockets: ``threads`` threads each perturbing, charging and committing requests
    through the proxy's Perturber and gate, one mechanism call per chunk vs batched (the scheduler's
    combiner). Per request: CPU ms (whole process) and wall ms; and the number of mechanism calls."""
    import threading

    from dptext.server import config_from_dict, hash_key
    from dptext.server.request import decode_body, parse_request
    from dptext.server.scheduler import Scheduler
    from dptext.server.services import Services

    out = {}
    for mode in ("one call per request", "batched"):
        cfg = config_from_dict({"upstream": {"base_url": "http://127.0.0.1:9/v1", "model": "mock"},
                                "privacy": {"mechanism": "rantext", "epsilon": epsilon},
                                "state_dir": str(tmp / f"core-{len(out)}"),
                                "auth": {"keys": [{"id": "bench", "sha256": hash_key(KEY)}]}})
        svc = Services.build(cfg)  # batched: the scheduler is attached to the perturber here
        if mode != "batched":  # undo the attachment: the Sanitizer's own lock, the mechanism's own perturb
            svc.perturber.sanitizer._lock = threading.Lock()
            vars(svc.perturber.mech).pop("perturb", None)
            svc.scheduler.close()
            svc.scheduler = Scheduler(cfg.limits.perturb_concurrency, cfg.limits.max_queue, batch=False)
        reqs = [parse_request(decode_body(b), cfg) for b in bodies[:n]]

        def work(chunk):
            for r in chunk:
                p = svc.perturber.perturb(svc.scheduler.gate, r, "bench")
                svc.accountant.charge("bench", p.report["epsilon_spent"] or 0.0)
                p.memo.commit()

        ts = [threading.Thread(target=work, args=(reqs[i::threads],)) for i in range(threads)]
        c0, t0 = time.process_time(), time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        comb = svc.scheduler.combiner
        out[mode] = {"cpu_ms": (time.process_time() - c0) / n * 1000, "wall_ms": (time.perf_counter() - t0) / n * 1000,
                     "calls": comb.calls if comb is not None else n}
        svc.scheduler.close()
    return out


def before_src(before: str, tmp: Path) -> Path:
    """``--before``: a ``src`` directory as given, else a git revision's ``src`` tree."""
    path = Path(before)
    if (path / "dptext").is_dir():
        return path.resolve()
    return archive_src(before, tmp)


def print_profile(path: Path, n: int = 25) -> None:
    import pstats

    s = io.StringIO()
    pstats.Stats(str(path), stream=s).sort_stats("tottime").print_stats(n)
    print(s.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200, help="measured requests per level")
    ap.add_argument("--levels", default="1,10,50")
    ap.add_argument("--epsilon", type=float, default=3.0)
    ap.add_argument("--before", help="also measure the proxy of this src directory or git revision")
    ap.add_argument("--profile", action="store_true", help="cProfile the current proxy (largest level)")
    ap.add_argument("--no-process", action="store_true",
                    help="run the current proxy without limits.perturb_process (one process)")
    ap.add_argument("--no-threads", action="store_true",
                    help="skip the 'threads' run (the current proxy without limits.perturb_process)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    bodies = prompts(len(levels) * args.requests + 2 * sum(levels) + 200)
    load = [os.getloadavg()[0]]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        upstream = start_mock(stack, tmp)
        targets = {"direct": (upstream, None)}  # every target is up at once; each level runs them in turn
        if args.before:
            targets["before"] = start_proxy(stack, tmp, upstream, args.epsilon, before_src(args.before, tmp),
                                            "before", True)
        if not args.no_threads and not args.no_process:  # the current proxy, perturbing in its own threads
            targets["threads"] = start_proxy(stack, tmp, upstream, args.epsilon, ROOT / "src", "threads", True)
        targets["after"] = start_proxy(stack, tmp, upstream, args.epsilon, ROOT / "src", "after", True,
                                       process=not args.no_process)
        rows = {name: [] for name in targets}
        fresh = {name: iter(bodies) for name in targets}  # every target sees the same prompts, each once
        for n in levels:
            for name, (url, pid) in targets.items():
                rows[name].append(asyncio.run(run_level(url, n, args.requests, fresh[name], pid)))
            load.append(os.getloadavg()[0])
        if args.profile:
            with ExitStack() as proxy_stack:
                url, _ = start_proxy(proxy_stack, tmp, upstream, args.epsilon, ROOT / "src", "profiled", True, True)
                asyncio.run(run_level(url, max(levels), args.requests, iter(bodies)))
            print_profile(tmp / "proxy.prof")
        steps = breakdown(args.epsilon, bodies, tmp)
        core = batched_core(args.epsilon, bodies, tmp)
    floor_wall, floor_cpu = perturb_floor(args.epsilon, bodies)
    bench = {"wall_s": round(time.perf_counter() - wall0, 1), "bench_process_cpu_s": round(time.process_time() - cpu0, 1)}
    direct = {r["clients"]: r for r in rows["direct"]}
    for name, rs in rows.items():
        for r in rs:
            d = direct[r["clients"]]
            r["added_p50_ms"] = round(r["p50_ms"] - d["p50_ms"], 2)
            r["throughput_vs_direct"] = round(r["req_per_s"] / d["req_per_s"], 3)
            if name != "direct":
                r["rest_p50_ms"] = round(r["added_p50_ms"] - r["perturb_p50_ms"] - r["queue_p50_ms"], 2)
    if args.json:
        print(json.dumps({"load_average": load, "floor_ms": {"wall": floor_wall, "cpu": floor_cpu},
                          "steps_cpu_ms": steps, "batched_core": core, "rows": rows, "bench": bench}, indent=2))
        return
    print(f"proxy overhead vs direct: mock upstream, RANTEXT eps={args.epsilon:g}, 100-word prompts, "
          f"{args.requests} requests per level; {os.cpu_count()} CPUs, load average during the runs "
          f"{' / '.join(f'{x:.1f}' for x in load)}")
    print(f"{'run':<8}{'clients':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'added p50':>11}"
          f"{'vs direct':>11}{'proxy CPU ms/req':>18}{'of which child':>16}{'errors':>8}")
    for name, rs in rows.items():
        for r in rs:
            print(f"{name:<8}{r['clients']:>8}{r['req_per_s']:>9}{r['p50_ms']:>9}{r['p95_ms']:>9}{r['p99_ms']:>9}"
                  f"{r['added_p50_ms']:>11}{r['throughput_vs_direct']:>11}{r.get('proxy_cpu_ms_per_req', '-'):>18}"
                  f"{r.get('child_cpu_ms_per_req', '-'):>16}{r['errors']:>8}")
    print("split of the added p50 (ms): mechanism = median server-timing 'perturb' (inside the core), "
          "queue = waiting for the perturbation slot, rest = added p50 - both")
    print(f"{'run':<8}{'clients':>8}{'added p50':>11}{'mechanism':>11}{'queue':>9}{'rest':>9}")
    for name, rs in rows.items():
        if name != "direct":
            for r in rs:
                print(f"{name:<8}{r['clients']:>8}{r['added_p50_ms']:>11}{r['perturb_p50_ms']:>11}"
                      f"{r['queue_p50_ms']:>9}{r['rest_p50_ms']:>9}")
    print("proxy steps in process, CPU ms per request: " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
    print(f"floor: the core alone (Sanitizer.sanitize, warm, in process) takes {floor_wall:.2f} ms wall, "
          f"{floor_cpu:.2f} ms CPU per prompt here, i.e. at most {1000 / floor_wall:.0f} prompts/s "
          f"({1000 / floor_cpu:.0f} per CPU-second) through one perturbation slot")
    print("core under 50 threads in process (perturb + charge + memo commit, no sockets): " + "; ".join(
        f"{k}: {v['cpu_ms']:.2f} ms CPU, {v['wall_ms']:.2f} ms wall per request, {v['calls']} mechanism calls"
        for k, v in core.items()))
    print(f"bench: {bench['wall_s']} s wall, {bench['bench_process_cpu_s']} s CPU in the bench process")
    print("targets: added p50 <= 3 ms at 1 client; at 50 clients >= 0.8 of direct throughput and added p50 <= 10 ms")
    for name in ("after", "threads"):  # issue 27 (batched perturbation): at the largest level, against before
        if "before" not in rows or name not in rows:
            continue
        a, b = rows[name][-1], rows["before"][-1]
        ratio = a["req_per_s"] / max(b["req_per_s"], 1e-9)
        print(f"batching (issue 27), {a['clients']} clients: throughput {name} / before = {ratio:.2f} "
              f"({a['req_per_s']} vs {b['req_per_s']} req/s; target >= 2), added p50 {name} {a['added_p50_ms']} ms "
              f"(before {b['added_p50_ms']} ms; target <= 50 ms); "
              + ("met" if ratio >= 2 and a["added_p50_ms"] <= 50 else "NOT met"))


if __name__ == "__main__":
    main()
