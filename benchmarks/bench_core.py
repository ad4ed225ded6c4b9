"""Core benchmark: spaces (cold build, warm load, cache size) and mechanism throughput.

Usage: python benchmarks/bench_core.py [--spaces] [--mechanisms] [--units 10000]

Throughput is measured on a 10,000-unit document cut from the Lee news
corpus (gensim test data): a cold pass (row tables of the document's units
computed on the fly) and the median of 5 warm passes after ``prepare(doc)``
("after set-up"). Peak memory is tracemalloc's peak over construction + one
cold pass, measured in a separate pass (numpy allocations included). Spaces are built cold in a throw-away cache directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path


def lee_document(n_units: int, space) -> str:
    import gensim

    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    text = path.read_text("utf-8", errors="replace")
    pieces = space.segment(text).pieces
    while len(pieces) < n_units:
        pieces = pieces + pieces
    return "".join(p.ws + p.text for p in pieces[:n_units])


def bench_spaces() -> None:
    code = ("import time,sys; from dptext.spaces.registry import SPACES; s=SPACES[sys.argv[1]](); "
            "t=time.perf_counter(); s.load(); print(time.perf_counter()-t, "
            "sum(f.stat().st_size for f in s.cache_path.iterdir()))")
    print(f"{'space':12s} {'cold build s':>12s} {'warm load s':>12s} {'cache MiB':>10s}")
    for name in ("cl100k-11k", "glove-50d", "smollm2"):
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "DPTEXT_CACHE_DIR": tmp}
            cold = subprocess.run([sys.executable, "-c", code, name], env=env, capture_output=True, text=True)
            warm = subprocess.run([sys.executable, "-c", code, name], env=env, capture_output=True, text=True)
            c, size = cold.stdout.split()
            w, _ = warm.stdout.split()
            print(f"{name:12s} {float(c):12.2f} {float(w):12.3f} {int(size) / 2**20:10.1f}", flush=True)


def bench_mechanisms(n_units: int) -> None:
    from dptext.mechanisms import get_mechanism
    from dptext.spaces import get_space

    configs = [("rantext", "cl100k-11k", 3.0), ("santext", "glove-50d", 3.0), ("santext+", "glove-50d", 3.0),
               ("custext", "glove-50d", 3.0), ("custext+", "glove-50d", 3.0)]
    print(f"{'mechanism':10s} {'space':11s} {'cold u/s':>10s} {'set-up s':>8s} {'warm u/s':>11s} {'peak MiB':>9s}")
    for name, space, eps in configs:
        doc = lee_document(n_units, get_space(space))
        m = get_mechanism(name, epsilon=eps, space=space, seed=0)
        n = len(m.space.segment(doc).pieces)
        t0 = time.perf_counter()
        m.perturb(doc)
        cold = n / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        m.prepare(doc)  # set-up: row tables for every unit of the document
        setup = time.perf_counter() - t0
        warm = []
        for _ in range(5):
            t0 = time.perf_counter()
            m.perturb(doc)
            warm.append(n / (time.perf_counter() - t0))
        # peak memory in a separate pass: tracemalloc slows allocation-heavy Python code
        del m
        tracemalloc.start()
        m = get_mechanism(name, epsilon=eps, space=space, seed=0)
        m.perturb(doc)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"{name:10s} {space:11s} {cold:10.0f} {setup:8.2f} {statistics.median(warm):11.0f} "
              f"{peak / 2**20:9.0f}", flush=True)


def bench_sampler(n_units: int) -> None:
    """The sampler alone (segmentation and records excluded): units/s of _sample on the same units."""
    import numpy as np

    from dptext.mechanisms import get_mechanism
    from dptext.spaces import get_space

    print(f"{'mechanism':10s} {'sampler-only warm u/s':>22s}")
    for name, space in (("rantext", "cl100k-11k"), ("santext+", "glove-50d"), ("custext+", "glove-50d")):
        sp = get_space(space)
        doc = lee_document(n_units, sp)
        idx = sp.lookup_many([p.text for p in sp.segment(doc).pieces])
        m = get_mechanism(name, epsilon=3.0, space=space, seed=0)
        idx = idx[(idx >= 0) & m.input_mask[np.maximum(idx, 0)]]
        rng = np.random.default_rng(0)
        m.prepare(doc)
        t = []
        for _ in range(5):
            t0 = time.perf_counter()
            m._sample(idx, rng)
            t.append(time.perf_counter() - t0)
        print(f"{name:10s} {len(idx) / statistics.median(t):22.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spaces", action="store_true")
    ap.add_argument("--mechanisms", action="store_true")
    ap.add_argument("--units", type=int, default=10_000)
    a = ap.parse_args()
    both = not (a.spaces or a.mechanisms)
    if a.spaces or both:
        bench_spaces()
    if a.mechanisms or both:
        bench_mechanisms(a.units)
        bench_sampler(a.units)


if __name__ == "__main__":
    main()
