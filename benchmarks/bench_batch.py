"""Batch sanitization benchmark: units/s of ``sanitize_corpus`` with RANTEXT.

Usage: python benchmarks/bench_batch.py [--docs 100000] [--epsilon 3] [--skip-ray]

Corpus: ``--docs`` short documents (one sentence each, cycled) cut from the
Lee news corpus (gensim test data), as JSONL with an id and a metadata field.
Runs: engine ``local`` with 1 worker (in-process) and 2 worker processes,
engine ``ray`` with 2 CPUs (Ray started by the run, as the CLI does). For
each: ``setup s`` (engine start: worker spawn / ``ray.init``), ``work s``
(everything after it, including Ray's actor start-up), units/s over the work
time and over the whole run. Scaling efficiency = (2-worker units/s) /
(2 x 1-worker units/s); ``driver cpu s`` is the CPU time of the driver process
itself (reading, merging, writing), which competes with the workers for cores. Ray's fixed start-up cost is the wall time of a ray
run on a 200-document corpus minus the in-process local run of the same.
All runs use the same seed and their outputs are checked to be identical.

Peak RSS per worker: a sampler thread walks this process's descendants every
0.2 s (local pool workers are its children, Ray's workers the raylet's) and
keeps each one's ``VmHWM`` (the kernel's peak resident set, shared file pages
such as memory-mapped tables included); the column is the largest over the
run's workers. The in-process run (1 worker) has no worker process: its
column is the driver's own peak so far.

``--src DIR`` benchmarks another checkout's ``src`` (e.g. the code before a
change) with this same script, so before/after figures come from one method.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

WORKER_MARKS = (b"multiprocessing", b"RaySanitizer")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class WorkerPeakRSS:
    """Largest VmHWM (MiB) seen among worker processes descending from this one (see module docstring)."""

    def __init__(self, period: float = 0.2):
        self.period, self.peak = period, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.wait(self.period):
            for pid in _descendants(me):
                try:
                    if not any(m in Path(f"/proc/{pid}/cmdline").read_bytes() for m in WORKER_MARKS):
                        continue
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak = max(self.peak, int(line.split()[1]) / 1024)
                except OSError:
                    continue

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def lee_sentences() -> list[str]:
    import gensim

    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    text = path.read_text("utf-8", errors="replace")
    sents = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 20 <= len(s.strip()) <= 160]
    return sents


def write_corpus(path: Path, n: int) -> None:
    sents = lee_sentences()
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "text": sents[i % len(sents)], "source": "lee"}) + "\n")


def run(src: Path, dst: Path, engine: str, workers: int, epsilon: float) -> dict:
    from dptext.batch import sanitize_corpus

    t0, c0 = time.perf_counter(), time.process_time()
    with WorkerPeakRSS() as rss:
        s = sanitize_corpus(src, dst, mechanism="rantext", epsilon=epsilon, engine=engine, workers=workers, seed=1,
                            log=lambda m: None)
    s["wall"], s["driver_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    s["peak_rss_mib"] = rss.peak if workers > 1 or engine == "ray" else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--epsilon", type=float, default=3.0)
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--src", help="benchmark the dptext package under this src folder instead")
    args = ap.parse_args()
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(args.src).resolve()), os.environ.get("PYTHONPATH", "")])
    import dptext

    print(f"dptext from {Path(dptext.__file__).parent}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big, small = tmp / "big.jsonl", tmp / "small.jsonl"
        write_corpus(big, args.docs)
        write_corpus(small, 200)
        configs = [("local", 1), ("local", 2)] + ([] if args.skip_ray else [("ray", 2)])
        rows = {}
        print(f"{args.docs} documents, RANTEXT ε={args.epsilon} on cl100k-11k", flush=True)
        print(f"{'engine':6s} {'workers':>7s} {'units':>9s} {'setup s':>8s} {'work s':>8s} "
              f"{'units/s (work)':>15s} {'units/s (all)':>14s} {'driver cpu s':>12s} {'peak RSS/worker MiB':>19s}",
              flush=True)
        for engine, w in configs:
            s = run(big, tmp / f"out-{engine}{w}.jsonl", engine, w, args.epsilon)
            rows[(engine, w)] = s
            work = s["seconds"] - s["startup_seconds"]
            print(f"{engine:6s} {w:7d} {s['units']:9d} {s['startup_seconds']:8.2f} {work:8.2f} "
                  f"{s['units_per_s']:15.0f} {s['units'] / s['seconds']:14.0f} {s['driver_cpu']:12.1f} "
                  f"{s['peak_rss_mib']:19.0f}", flush=True)
        r1, r2 = rows[("local", 1)]["units_per_s"], rows[("local", 2)]["units_per_s"]
        print(f"scaling efficiency local 1 -> 2 workers: {r2 / (2 * r1):.2f}")
        same = all(filecmp.cmp(tmp / "out-local1.jsonl", tmp / f"out-{e}{w}.jsonl", shallow=False)
                   for e, w in configs)
        print(f"outputs identical across engines and worker counts: {same}")
        if not args.skip_ray:
            rr = rows[("ray", 2)]["units_per_s"]
            print(f"ray 2 CPUs vs local 2 workers (work units/s): {rr / r2:.2f}")
            base = run(small, tmp / "s-local.jsonl", "local", 1, args.epsilon)["wall"]
            ray_small = run(small, tmp / "s-ray.jsonl", "ray", 2, args.epsilon)
            print(f"ray fixed start-up cost: {ray_small['wall'] - base:.2f} s "
                  f"(ray.init {ray_small['startup_seconds']:.2f} s, the rest actor start-up and planning; "
                  f"200-doc run {ray_small['wall']:.2f} s vs {base:.2f} s in-process)")


if __name__ == "__main__":
    main()
