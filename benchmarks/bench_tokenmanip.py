"""Benchmark: Cape latency and token-manipulation throughput (issue 4).

* Cape: a 50-unit prompt on ``smollm2``: device-model pass + sampling, median of 10 runs
  (after one warm-up that loads the model and the calibrated clip bound).
* Stencil, punctuated Stencil, noise mapper, lossy mappers: units/s on a 10,000-unit document,
  end to end (``perturb``: segmentation, policies, records) and for the mechanism step alone
  (``_sample`` on the document's vocabulary indices).

The document is deterministic: words drawn Zipf-like (by frequency rank) from the space's
vocabulary, sentences of 8-20 words with commas and full stops. Targets (issue 4): Cape <= 100 ms
per 50-unit prompt; Stencil and noise mapper >= 20,000 units/s; mappers >= 1,000,000 units/s.

    python benchmarks/bench_tokenmanip.py [--space smollm2] [--units 10000] [--quick]
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


def bench_throughput(space_name: str, n_units: int, repeat: int) -> None:
    space = get_space(space_name)
    doc = document(space, n_units)
    seg = space.segment(doc)
    idx = space.lookup_many([p.text for p in seg.pieces])
    idx = idx[idx >= 0]
    n = len(seg.pieces)
    print(f"document [{space_name}]: {n} units, {len(np.unique(idx))} distinct in-vocabulary")
    cases = [("2-random", {}), ("3-random", {}), ("high-freq", {}), ("low-freq", {}),
             ("stencil", {}), ("punctuated-stencil", {}),
             ("noise-mapper", {"epsilon": 100.0}), ("noise-mapper", {"epsilon": 1000.0})]
    for name, kw in cases:
        m = get_mechanism(name, space=space, seed=1, **kw)
        m.perturb(doc[:2000])  # warm-up (bf16 tables, neighbour rows for a few units)
        end = statistics.median(timed(lambda: m.perturb(doc), repeat))
        label = name + (f" eta={kw['epsilon']:g}" if kw else "")
        if name.endswith("stencil"):
            step = f"{n / end:,.0f}"  # the mechanism step needs the prompt: end to end only
        else:
            rng = np.random.default_rng(2)
            alone = statistics.median(timed(lambda: m._sample(idx, rng), repeat))
            step = f"{len(idx) / alone:,.0f}"
        print(f"  {label:26s} perturb {n / end:>12,.0f} units/s   mechanism step {step:>12s} units/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", default="smollm2")
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=10, help="Cape repetitions (throughput uses 3)")
    ap.add_argument("--skip-cape", action="store_true")
    args = ap.parse_args()
    if not args.skip_cape:
        bench_cape(args.space, args.repeat)
    bench_throughput(args.space, args.units, 3)


if __name__ == "__main__":
    main()
