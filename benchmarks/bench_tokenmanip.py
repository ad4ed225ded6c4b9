"""Benchmark: Stencil and noise-mapper throughput, exact against IVF search, and their agreement (one run).

* Document: the first ``--units`` units of the Lee news corpus (gensim test data), real text.
* Throughput (units/s, wall and CPU = ``time.process_time``, one timed run after a warm-up): ``perturb`` on the
  document for Stencil, punctuated Stencil and the noise mapper (η = 100, 150, 1000), with exact
  search (``exact=True``, the default) and IVF search (``exact=False``, ``nprobe`` lists); the noise
  mapper's mechanism step alone too. ``--before SRC`` runs the same rows in a child process against
  another source tree (e.g. ``/work/main/src``; its ``exact=False`` was HNSW, ``ef_search=64``).
* Agreement with exact search on the document's units (``--queries``, default 10,000), per query kind:
  plain (a unit's own embedding, itself excluded), Stencil quasi-embeddings (``t_k`` excluded),
  noise-mapper points ``E[x] + z`` at η = 1000, 150, 100 (``x`` excluded, full search: no pruning).
  For each ``nprobe`` in ``--nprobe``: agreement of the returned unit and search units/s: the
  recall/speed frontier. Mechanism-level agreement (exact and IVF mechanisms, same seed) for
  Stencil and the noise mapper is printed beside it.

Targets (issue 16): >= 20,000 units/s with >= 0.995 agreement.

    python benchmarks/bench_tokenmanip.py [--before /work/main/src] [--nprobe 32,64,128,256,384]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

CASES = [("stencil", {}), ("punctuated-stencil", {}), ("noise-mapper", {"epsilon": 100.0}),
         ("noise-mapper", {"epsilon": 150.0}), ("noise-mapper", {"epsilon": 1000.0})]

# Runs in this process or, for --before, in a child against another source tree (old or new API).
THROUGHPUT = r'''
import json, statistics, sys, time
import numpy as np
from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space

def lee(space, n_units):
    import gensim, pathlib
    text = (pathlib.Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor").read_text(
        "utf-8", errors="replace")
    lo, hi = 0, len(text)
    while lo < hi:  # shortest prefix with n_units units
        mid = (lo + hi) // 2
        if len(space.segment(text[:mid]).pieces) >= n_units: hi = mid
        else: lo = mid + 1
    return text[:lo]

def timed(fn, repeat=1):
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)

def throughput(space_name, n_units, cases):
    space = get_space(space_name)
    doc = lee(space, n_units)
    seg = space.segment(doc)
    idx = space.lookup_many([p.text for p in seg.pieces])
    idx = idx[idx >= 0]
    n = len(seg.pieces)
    rows = []
    for name, kw in cases:
        m = get_mechanism(name, space=space, seed=1, **kw)
        m.perturb(doc[:2000])  # warm-up: tables, indexes
        wall, cpu = timed(lambda: m.perturb(doc))
        row = {"name": name, "kw": kw, "units": n, "wall": n / wall, "cpu": n / cpu}
        if name == "noise-mapper":
            rng = np.random.default_rng(2)
            wall, cpu = timed(lambda: m._sample(idx, rng))
            row.update(step_wall=len(idx) / wall, step_cpu=len(idx) / cpu)
        rows.append(row)
    return rows

if __name__ == "__main__":
    a = json.loads(sys.argv[1])
    print("JSON" + json.dumps(throughput(a["space"], a["units"], a["cases"])))
'''
_ns: dict = {}
exec(compile(THROUGHPUT, "<throughput>", "exec"), _ns)  # noqa: S102 - the same code the child runs


def show(rows, tag: str) -> None:
    for r in rows:
        kw = dict(r["kw"])
        label = r["name"] + (f" eta={kw.pop('epsilon'):g}" if "epsilon" in kw else "")
        label += " " + " ".join(f"{k}={v}" for k, v in kw.items())
        line = f"  {tag:6s} {label:44s} perturb {r['wall']:>8,.0f} units/s wall {r['cpu']:>8,.0f} cpu"
        if "step_wall" in r:
            line += f" | step {r['step_wall']:>8,.0f} wall {r['step_cpu']:>8,.0f} cpu"
        print(line, flush=True)


def before(src: str, space: str, units: int, cases) -> list:
    env = {**os.environ, "PYTHONPATH": src}
    arg = json.dumps({"space": space, "units": units, "cases": cases})
    out = subprocess.run([sys.executable, "-c", THROUGHPUT, arg], env=env, capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("JSON")]
    if out.returncode or not lines:
        raise SystemExit(f"--before {src} failed:\n{out.stderr[-3000:]}")
    return json.loads(lines[-1][4:])


def agreement(space_name: str, n_queries: int, nprobes: list[int]) -> None:
    from dptext.mechanisms import get_mechanism
    from dptext.mechanisms._fastnn import ann_best_match, exact_best_match
    from dptext.spaces import get_space

    space = get_space(space_name)
    seg = space.segment(_ns["lee"](space, n_queries + n_queries // 3))
    idx = space.lookup_many([p.text for p in seg.pieces])
    pos = np.flatnonzero(idx >= 0)[:n_queries]
    x = idx[pos]
    v, _ = get_mechanism("stencil", space=space).quasi_embeddings(seg, pos)
    nm = get_mechanism("noise-mapper", eta=100.0, space=space)
    rng = np.random.default_rng(3)
    kinds = [("plain, cosine (Stencil)", "cosine", space.normalized[x]),
             ("Stencil quasi-embedding", "cosine", v),
             ("plain, Euclidean (noise mapper)", "euclidean", space.embeddings[x])]
    for eta in (1000.0, 150.0, 100.0):
        nm.eta = eta
        kinds.append((f"noisy eta={eta:g}", "euclidean", (space.embeddings[x] + nm.noise(len(x), rng)).astype(np.float32)))
    print(f"search agreement with exact [{space_name}], {len(x)} units per kind (target >= 0.995 at >= 20,000/s):")
    for label, metric, q in kinds:
        t0, c0 = time.perf_counter(), time.process_time()
        exact = exact_best_match(q, space, metric, exclude=x)
        ew, ec = time.perf_counter() - t0, time.process_time() - c0
        line = f"  {label:32s} exact {len(q) / ew:>6,.0f}/s wall {len(q) / ec:>6,.0f} cpu"
        for npb in nprobes:
            t0, c0 = time.perf_counter(), time.process_time()
            got = ann_best_match(q, space, metric, exclude=x, nprobe=npb)
            aw, ac = time.perf_counter() - t0, time.process_time() - c0
            assert not np.any(got == x)
            line += f" | nprobe={npb}: {np.mean(got == exact):.4f} {len(q) / aw:>6,.0f}/s {len(q) / ac:>6,.0f} cpu"
        print(line, flush=True)
    print("mechanism-level agreement (same seed, exact vs exact=False, default nprobe):")
    for name, kw in CASES:  # the mechanism step on the document's units, same generator state for both
        a, b = (get_mechanism(name, space=space, seed=7, exact=e, **kw) for e in (True, False))
        if name.endswith("stencil"):
            run = lambda m: m._sample_in_context(seg, pos, x, np.random.default_rng(7))  # noqa: E731
        else:
            run = lambda m: m._sample(x, np.random.default_rng(7))  # noqa: E731
        print(f"  {name} {kw}: {np.mean(run(a) == run(b)):.4f} of {len(x)} units identical", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", default="smollm2")
    ap.add_argument("--units", type=int, default=10_000, help="document units for the throughput rows")
    ap.add_argument("--queries", type=int, default=10_000, help="units per kind in the agreement table")
    ap.add_argument("--nprobe", default="32,64,128,256,384", help="IVF lists probed (comma-separated)")
    ap.add_argument("--before", default=None, help="source tree to compare against (child process)")
    ap.add_argument("--skip-agreement", action="store_true")
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}; cores: {os.cpu_count()}")
    cases = [[n, {**kw, "exact": e}] for e in (True, False) for n, kw in CASES]
    if args.before:
        print(f"before ({args.before}; exact=False there is its HNSW option):")
        show(before(args.before, args.space, args.units, cases), "before")
    print(f"after ({pathlib.Path(__file__).resolve().parents[1]}):")
    show(_ns["throughput"](args.space, args.units, cases), "after")
    if not args.skip_agreement:
        agreement(args.space, args.queries, [int(e) for e in args.nprobe.split(",")])
    with open("/proc/loadavg") as f:
        print(f"load average at the end: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
