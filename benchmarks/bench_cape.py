"""Cape on a 50-unit prompt: per-prompt ms before/after, and where the time goes.

One run prints two columns, each the median over ``--repeats`` runs after one
warm-up, wall-clock ms and CPU ms (``time.process_time``, all threads) side by side:

* **before**: the source tree of ``--before`` (a git revision of this repository,
  default ``f2591c8``, exported to a temporary directory; or a directory holding
  ``dptext``), run in a subprocess: llama.cpp full-vocabulary logits for every
  position, gathered to the space's units; distances by their own GEMM;
* **after**: this tree: llama.cpp returns the final hidden states of the scored
  positions and stops before its LM head; one GEMM against the space's units
  gives the logits and, in the same pass, the dot products the distances need.

Stages (rows): the device pass (tokenise, align, forward pass, logits; after:
also the distance dot products), utilities + bucket law (before: also the
distance GEMM), sampling, and ``Cape.perturb`` end to end (segmentation,
policies, report). Floor rows (after only): the forward pass alone with the LM
head skipped, and the restricted head GEMM alone. ``--threads`` sets
``DPTEXT_LLM_THREADS`` for both columns (default: the runtime's policy). The load
average is printed with each column.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PROMPT = ("My doctor said the biopsy results from the hospital were normal, so my wife and I celebrated with "
          "a long dinner downtown near the river, and then we walked home slowly under the bright lights while "
          "talking about moving to a smaller town next spring with our two kids and the old dog. Tomorrow "
          "morning Sarah will drive to Boston for her interview at the bank, then visit her grandmother, "
          "who still bakes bread every Sunday and keeps bees behind the red barn.")
ROOT = Path(__file__).resolve().parents[1]
STAGES = (("device pass", "device"), ("utilities + bucket law", "utilities"), ("sampling", "sampling"),
          ("perturb end to end", "perturb"), ("  floor: forward pass, no LM head", "forward"),
          ("  floor: restricted head GEMM", "head"))


def timed(fn, repeats: int):
    out = fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return (statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3), out


def measure(repeats: int, epsilon: float) -> dict:
    """Stage timings of the ``dptext`` on ``sys.path`` (works on both trees)."""
    from dptext.mechanisms import get_mechanism
    from dptext.mechanisms.cape import bucket_law

    mech = get_mechanism("cape", epsilon=epsilon, seed=0)
    dev, space = mech.device, mech.space
    seg = mech.segment(PROMPT)
    pos, idx = mech.vocab_positions(seg)
    pos, idx = pos[:50], idx[:50]
    rng = np.random.default_rng(0)
    res = {"units": int(len(pos)), "load_start": os.getloadavg()[0]}
    fused = hasattr(dev, "iter_unit_scores")  # after: logits and distance dots from one GEMM
    if fused:
        def device():
            parts = list(dev.iter_unit_scores(seg, pos, space, space.embeddings[idx], chunk=len(pos)))
            return parts[0][1], parts[0][2]
    else:
        def device():
            return dev.unit_logits(seg, pos, space), None
    res["device"], (logits, dots) = timed(device, repeats)

    def utilities():
        u = mech.utility(logits, idx, dots) if fused else mech.utility(logits, idx)
        return bucket_law(u, mech.epsilon, mech.sensitivity, mech.n_buckets)

    res["utilities"], (b, counts, probs) = timed(utilities, repeats)
    r = np.arange(len(pos))
    if fused:
        from dptext.mechanisms.cape import draw

        res["sampling"], _ = timed(lambda: draw(b, counts, probs, r, rng), repeats)
    else:
        def sample():  # the sampler of the old _sample_in_context
            order = np.argsort(b, axis=1, kind="stable")
            starts = np.cumsum(counts, axis=1) - counts
            cdf = np.cumsum(probs, axis=1)
            k = np.minimum((cdf < rng.random(len(pos))[:, None] * cdf[:, -1:]).sum(axis=1), mech.n_buckets - 1)
            j = (rng.random(len(pos)) * counts[r, k]).astype(np.int64)
            return order[r, starts[r, k] + np.minimum(j, counts[r, k] - 1)]

        res["sampling"], _ = timed(sample, repeats)
    res["perturb"], _ = timed(lambda: mech.perturb(PROMPT, rng=rng), repeats)
    if fused:
        tokens, j, spaced = dev.align(seg, pos)
        rows, inv = np.unique(j, return_inverse=True)
        seq = ([dev.model.token_bos()] + [int(t) for t in tokens])[: int(rows[-1]) + 1]
        res["forward"], h = timed(lambda: dev.hidden.run(seq, rows), repeats)
        head, q = dev.lm_head(space), space.embeddings[idx]
        res["head"], _ = timed(lambda: head.scores(h[inv.ravel()], spaced, q), repeats)
        res["tokens"] = len(seq)
    res["load_end"] = os.getloadavg()[0]
    res["threads"] = int(dev.model.context_params.n_threads)
    return res


def before_tree(spec: str) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    """``src`` of a git revision (exported) or a directory holding ``dptext``."""
    p = Path(spec)
    if (p / "dptext").is_dir():
        return p, None
    from _revisions import archive_src

    tmp = tempfile.TemporaryDirectory(prefix="bench-cape-before-")
    return archive_src(spec, Path(tmp.name)), tmp


def run_tree(src: Path, repeats: int, epsilon: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, __file__, "--json", "--repeats", str(repeats), "--epsilon", str(epsilon)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=3.0)
    ap.add_argument("--before", default="f2591c8", help="git revision or src directory for the 'before' column")
    ap.add_argument("--threads", type=int, default=None, help="DPTEXT_LLM_THREADS for both columns")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one column, as JSON (subprocess)
    args = ap.parse_args()
    if args.threads is not None:
        os.environ["DPTEXT_LLM_THREADS"] = str(args.threads)
    if args.json:
        print(json.dumps(measure(args.repeats, args.epsilon)))
        return
    src, tmp = before_tree(args.before)
    try:
        before = run_tree(src, args.repeats, args.epsilon)
    finally:
        if tmp is not None:
            tmp.cleanup()
    after = run_tree(ROOT / "src", args.repeats, args.epsilon)
    print(f"Cape, {after['units']}-unit prompt ({after.get('tokens', '?')} tokens), epsilon {args.epsilon}, "
          f"{after['threads']} llama.cpp thread(s), {os.cpu_count()} CPUs; median of {args.repeats}")
    print(f"{'stage (ms)':36s} {'before wall':>11s} {'cpu':>7s}   {'after wall':>10s} {'cpu':>7s}")
    for label, key in STAGES:
        cells = []
        for col in (before, after):
            v = col.get(key)
            cells.append(f"{v[0]:11.1f} {v[1]:7.1f}" if v else f"{'-':>11s} {'-':>7s}")
        print(f"{label:36s} {cells[0]}   {cells[1]}")
    print(f"load average (1 min) start/end: before {before['load_start']:.1f}/{before['load_end']:.1f}, "
          f"after {after['load_start']:.1f}/{after['load_end']:.1f}")
    print("before: utilities include the distance GEMM; after: the device pass includes the distance dot products "
          "(fused into the head GEMM).")


if __name__ == "__main__":
    main()
