"""Benchmark: Cape latency and token-manipulation throughput.

* Cape: a 50-unit prompt on ``smollm2``: device-model pass + sampling, median of 10 runs
  (after one warm-up that loads the model and the calibrated clip bound).
* Stencil, punctuated Stencil, noise mapper, lossy mappers: units/s on a 10,000-unit document,
  end to end (``perturb``: segmentation, policies, records) and for the mechanism step alone
  (``_sample`` on the document's vocabulary indices); Stencil and the noise mapper both with exact
  search (``exact=True``, the default) and with the HNSW index (``exact=False``), wall and CPU time.
* ANN agreement: the unit returned with ``exact=False`` against the exact one, on 10,000 queries:
  plain (a unit's own normalised embedding, itself excluded), Stencil quasi-embeddings of the document
  (``t_k`` excluded), noise-mapper points ``E[x] + z`` at two η (``x`` excluded, full search, i.e.
  without the exact pruning the mechanism applies first).

The document is deterministic: words drawn Zipf-like (by frequency rank) from the space's
vocabulary, sentences of 8-20 words with commas and full stops. Targets: Cape <= 100 ms
per 50-unit prompt; Stencil and noise mapper >= 20,000 units/s; mappers >= 1,000,000 units/s.

    python benchmarks/bench_tokenmanip.py [--space smollm2] [--units 10000] [--skip-cape] [--ef 64,256]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space

PROMPT = ("Yesterday my sister Maria called the clinic in Boston because her blood pressure readings were "
          "unusually high, and the nurse suggested she stop taking the new medication until Doctor Patel "
          "reviews the results next Thursday morning. She is worried about her job at the local bank.")  # 50 units


def document(space, n_units: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    order = np.argsort(-space.freq, kind="stable")
    words = [space.units[i] for i in order if space.units[i].isalpha() and space.units[i].islower()][:20000]
    p = 1.0 / (np.arange(len(words)) + 10.0)
    p /= p.sum()
    out, count = [], 0
    while count < n_units:
        k = int(rng.integers(8, 21))
        sent = [words[i] for i in rng.choice(len(words), k, p=p)]
        if k > 12:
            sent[k // 2] += ","
        out.append(" ".join(sent).capitalize() + ".")
        count += len(space.segment(out[-1]).pieces)
    return " ".join(out)


def timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def timed_cpu(fn, repeat: int) -> tuple[float, float]:
    """Median wall and CPU (this process, all threads) seconds of ``fn``."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def bench_cape(space_name: str, repeat: int) -> None:
    cape = get_mechanism("cape", epsilon=3, space=space_name, seed=0)
    space = cape.space
    seg = space.segment(PROMPT)
    units = len(seg.pieces)
    cape.perturb(PROMPT)  # warm-up: model load, clip bound, distances
    pos, idx = cape.vocab_positions(seg)
    dev = timed(lambda: cape.device.unit_logits(seg, pos, space), repeat)
    total = timed(lambda: cape.perturb(PROMPT), repeat)
    print(f"cape [{space_name}] prompt of {units} units ({len(pos)} perturbed): "
          f"device pass median {1000 * statistics.median(dev):.1f} ms, "
          f"perturb (pass + sampling) median {1000 * statistics.median(total):.1f} ms "
          f"(min {1000 * min(total):.1f} ms; target <= 100 ms)")


def bench_agreement(space_name: str, n_queries: int, efs: list[int]) -> None:
    """Agreement of the HNSW path (``exact=False``) with exact search, on ``n_queries`` queries per kind."""
    from dptext.mechanisms._fastnn import ann_best_match, best_match

    space = get_space(space_name)
    doc = document(space, n_queries + n_queries // 4)
    st = get_mechanism("stencil", space=space)
    seg = space.segment(doc)
    idx = space.lookup_many([p.text for p in seg.pieces])
    pos = np.flatnonzero(idx >= 0)[:n_queries]
    v, _ = st.quasi_embeddings(seg, pos)
    rng = np.random.default_rng(3)
    x = idx[pos]
    nm = get_mechanism("noise-mapper", eta=100.0, space=space)
    kinds = [("plain (own embedding)", "cosine", space.normalized[x], x),
             ("stencil quasi-embedding", "cosine", v, x)]
    for eta in (1000.0, 100.0):
        nm.eta = eta
        kinds.append((f"noisy (noise mapper eta={eta:g})", "euclidean",
                      (space.embeddings[x] + nm.noise(len(x), rng)).astype(np.float32), x))
    for label, metric, q, ex in kinds:
        table, bias, qq = ((space.normalized, None, q) if metric == "cosine"
                           else (space.embeddings, -space.sq_norms, 2.0 * q))
        t0, c0 = time.perf_counter(), time.process_time()
        exact = best_match(qq, table, (space.cache_key, metric), bias=bias, exclude=ex)
        ew, ec = time.perf_counter() - t0, time.process_time() - c0
        line = f"  {label:34s} n={len(q)}  exact {len(q) / ew:>7,.0f}/s wall {len(q) / ec:>7,.0f}/s cpu"
        for ef in efs:
            t0, c0 = time.perf_counter(), time.process_time()
            got = ann_best_match(q, space, metric, exclude=ex, ef_search=ef)
            aw, ac = time.perf_counter() - t0, time.process_time() - c0
            assert not np.any(got == ex)
            line += (f" | ef={ef}: agreement {np.mean(got == exact):.4f}, "
                     f"{len(q) / aw:>6,.0f}/s wall {len(q) / ac:>6,.0f}/s cpu")
        print(line, flush=True)


def bench_throughput(space_name: str, n_units: int, repeat: int) -> None:
    space = get_space(space_name)
    doc = document(space, n_units)
    seg = space.segment(doc)
    idx = space.lookup_many([p.text for p in seg.pieces])
    idx = idx[idx >= 0]
    n = len(seg.pieces)
    print(f"document [{space_name}]: {n} units, {len(np.unique(idx))} distinct in-vocabulary")
    cases = [("2-random", {}), ("3-random", {}), ("high-freq", {}), ("low-freq", {})]
    for exact in (True, False):
        cases += [("stencil", {"exact": exact}), ("punctuated-stencil", {"exact": exact}),
                  ("noise-mapper", {"epsilon": 100.0, "exact": exact}),
                  ("noise-mapper", {"epsilon": 1000.0, "exact": exact})]
    for name, kw in cases:
        m = get_mechanism(name, space=space, seed=1, **kw)
        m.perturb(doc[:2000])  # warm-up (bf16 tables, neighbour rows for a few units, ANN index)
        wall, cpu = timed_cpu(lambda: m.perturb(doc), repeat)
        label = name + (f" eta={kw['epsilon']:g}" if "epsilon" in kw else "")
        label += {True: " exact", False: " hnsw"}.get(kw.get("exact"), "")
        line = f"  {label:34s} perturb {n / wall:>11,.0f} units/s wall {n / cpu:>11,.0f} cpu"
        if not name.endswith("stencil"):  # Stencil's step needs the prompt: end to end only
            rng = np.random.default_rng(2)
            wall, cpu = timed_cpu(lambda: m._sample(idx, rng), repeat)
            line += f"   mechanism step {len(idx) / wall:>11,.0f} units/s wall {len(idx) / cpu:>11,.0f} cpu"
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", default="smollm2")
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=10, help="Cape repetitions (throughput uses 3)")
    ap.add_argument("--skip-cape", action="store_true")
    ap.add_argument("--ef", default="64", help="efSearch values for the agreement table (comma-separated)")
    ap.add_argument("--queries", type=int, default=10_000, help="queries per kind in the agreement table")
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")
    if not args.skip_cape:
        bench_cape(args.space, args.repeat)
    bench_throughput(args.space, args.units, 3)
    print(f"HNSW agreement with exact search [{args.space}] (target >= 0.995):")
    bench_agreement(args.space, args.queries, [int(e) for e in args.ef.split(",")])


if __name__ == "__main__":
    main()
