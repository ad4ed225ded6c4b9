"""Cape on a 50-unit prompt: where the time goes (device pass, utilities, sampling).

Prints the median over ``--repeats`` runs of each stage, after one warm-up run:

* device pass: tokenise, align, one llama.cpp forward pass with logits for every
  position, and the gather of the space's candidate logits;
* utilities: ``u = λ_L·L̃ − λ_D·d̃`` (one distance GEMM) and the bucket law;
* sampling: bucket and member draws;
* end to end: ``Cape.perturb`` (segmentation, policies, report included).

Also the device pass alone with the prompt padded to the same token count, so the
floor set by the forward pass is visible. Load average is printed beside the numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

PROMPT = ("My doctor said the biopsy results from the hospital were normal, so my wife and I celebrated with "
          "a long dinner downtown near the river, and then we walked home slowly under the bright lights while "
          "talking about moving to a smaller town next spring with our two kids and the old dog. Tomorrow "
          "morning Sarah will drive to Boston for her interview at the bank, then visit her grandmother, "
          "who still bakes bread every Sunday and keeps bees behind the red barn.")


def timed(fn, repeats: int) -> tuple[float, object]:
    out = fn()  # warm-up
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1000.0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=3.0)
    args = ap.parse_args()

    from dptext.mechanisms import get_mechanism
    from dptext.mechanisms.cape import bucket_law

    mech = get_mechanism("cape", epsilon=args.epsilon, seed=0)
    seg = mech.segment(PROMPT)
    pos, idx = mech.vocab_positions(seg)
    pos, idx = pos[:50], idx[:50]  # the 50-unit prompt of the target
    rng = np.random.default_rng(0)
    print(f"prompt: {len(seg.pieces)} pieces, {len(pos)} perturbed units; |V| = {mech.space.size}; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    dev_ms, logits = timed(lambda: mech.device.unit_logits(seg, pos, mech.space), args.repeats)

    def utilities():
        u = mech.utility(logits, idx)
        return bucket_law(u, mech.epsilon, mech.sensitivity, mech.n_buckets)

    util_ms, law = timed(utilities, args.repeats)
    b, counts, probs = law

    def sample():
        order = np.argsort(b, axis=1, kind="stable")
        starts = np.cumsum(counts, axis=1) - counts
        cdf = np.cumsum(probs, axis=1)
        k = np.minimum((cdf < rng.random(len(pos))[:, None] * cdf[:, -1:]).sum(axis=1), mech.n_buckets - 1)
        r = np.arange(len(pos))
        j = (rng.random(len(pos)) * counts[r, k]).astype(np.int64)
        return order[r, starts[r, k] + np.minimum(j, counts[r, k] - 1)]

    samp_ms, _ = timed(sample, args.repeats)
    e2e_ms, _ = timed(lambda: mech.perturb(PROMPT, rng=rng), args.repeats)

    m = mech.device.model
    tokens, _, _ = mech.device.align(seg, pos)

    def forward_only():
        m.reset()
        m.eval([m.token_bos()] + list(tokens))

    fwd_ms, _ = timed(forward_only, args.repeats)
    print(f"{'stage':28s} {'ms':>8s}")
    for name, v in (("device pass (total)", dev_ms), ("  forward pass alone", fwd_ms),
                    ("utilities + bucket law", util_ms), ("sampling", samp_ms), ("perturb end to end", e2e_ms)):
        print(f"{name:28s} {v:8.1f}")
    print(f"tokens in the forward pass: {len(tokens) + 1}; load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
