"""RANTEXT with calibrated vs published noise: |C_r|/|V|, retention and KNN protection.

Usage: python benchmarks/bench_rantext_calibration.py [--space cl100k-11k] [--units 10000] [--draws 2000]

For ε = 2, 6, 10, 14 and ``noise`` in {calibrated, paper}:

* ``|C_r|/|V|`` quartiles for the unit "happy" (``--draws`` draws of d*), and the share of
  draws with ``|C_r|/|V| ≤ 0.05`` (the calibration target);
* retention: the share of in-vocabulary units left unchanged on a ``--units``-unit
  document cut from the Lee news corpus (gensim test data);
* KNN protection: ``1 − ASR@1`` of the embedding-inversion (KNN) attack on the same
  perturbed document (``dptext.attacks``), over the units the mechanism sampled.
Fixed seeds; prints one row per (ε, noise).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import numpy as np

TARGETS = {2.0: 0.015, 6.0: 0.09, 10.0: 0.10, 14.0: 0.105}


def lee_document(n_units: int, space) -> str:
    import gensim

    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    pieces = space.segment(path.read_text("utf-8", errors="replace")).pieces
    while len(pieces) < n_units:
        pieces = pieces + pieces
    return "".join(p.ws + p.text for p in pieces[:n_units])


def main() -> None:
    from dptext.attacks.base import observed_from_results
    from dptext.attacks.knn import KNNAttack
    from dptext.mechanisms import get_mechanism
    from dptext.spaces import get_space

    ap = argparse.ArgumentParser()
    ap.add_argument("--space", default="cl100k-11k")
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=2000)
    a = ap.parse_args()
    space = get_space(a.space)
    doc = lee_document(a.units, space)
    print(f"space {a.space}, {a.units}-unit Lee document, load {os.getloadavg()[0]:.2f}")
    print(f"{'eps':>4s} {'noise':10s} {'Z':>7s} {'Pr(<=5%)':>9s} {'target':>7s} {'|C_r|/|V| q25':>13s} "
          f"{'median':>7s} {'q75':>6s} {'retention':>9s} {'KNN prot@1':>10s}")
    for eps in (2.0, 6.0, 10.0, 14.0):
        for noise in ("calibrated", "paper"):
            m = get_mechanism("rantext", epsilon=eps, space=a.space, noise=noise, seed=0)
            sizes = m.candidate_set_sizes("happy", a.draws, rng=np.random.default_rng(7)) / space.size
            below = float(np.mean(sizes <= math.floor(0.05 * space.size) / space.size))
            q = np.quantile(sizes, [0.25, 0.5, 0.75])
            res = m.perturb(doc, rng=np.random.default_rng(11))
            units = [u for u in res.units if u.action == "perturbed"]
            retention = float(np.mean([u.output.lower() == u.original.lower() for u in units]))
            obs = observed_from_results([res])
            score = KNNAttack(m, k=1).evaluate(obs)
            print(f"{eps:4g} {noise:10s} {m.z:7.3f} {100 * below:8.1f}% {100 * TARGETS[eps]:6.1f}% "
                  f"{q[0]:13.4f} {q[1]:7.4f} {q[2]:6.4f} {retention:9.3f} {score.protection_at_1:10.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
