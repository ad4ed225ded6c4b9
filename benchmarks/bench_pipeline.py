"""Per-stage latency of the InferDPT pipeline with the embedded defaults.

Document: the first 50 units (as the mechanism segments them) of a fixed
private text; RANTEXT ε=3 on cl100k-11k; SmolLM2-135M-Instruct in-process as
both the remote stand-in and the local extraction model; both generate exactly
``--tokens`` tokens (end-of-turn is suppressed with a logit bias so every run
does the same work). One warm-up run, then the median of ``--runs`` runs.

Reference: the InferDPT paper reports about 3.6 s for extraction on a GPU with
a 7B local model; the target for perturbation + orchestration is < 20 ms.

    python benchmarks/bench_pipeline.py [--runs 5] [--tokens 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from dptext.llm import get_backend
from dptext.mechanisms import get_mechanism
from dptext.inferdpt import InferDPT

TEXT = (
    "Dear Dr. Patel, my name is Maria Gonzalez and I live on Elm Street in Springfield. "
    "Last week my blood tests showed type 2 diabetes, and I am worried about keeping my job "
    "as a school bus driver while I start the new insulin plan. My manager, Tom Becker, "
    "has asked for a letter from your office before the end of the month."
)
PAPER_EXTRACT_S = 3.6


def document(mech, n_units: int) -> str:
    pieces = mech.space.segment(TEXT).pieces
    if len(pieces) < n_units:
        sys.exit(f"sample text has only {len(pieces)} units")
    return "".join(p.ws + p.text for p in pieces[:n_units]).strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--units", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    mech = get_mechanism("rantext", epsilon=3, space="cl100k-11k")
    model = get_backend("local", generate_options={"logit_bias": {2: -100.0}})  # 2 = <|im_end|> (EOS)
    pipe = InferDPT(mech, model, model, max_tokens=args.tokens)
    doc = document(mech, args.units)
    pipe.run(doc, seed=0)  # warm-up: model load, distance rows

    runs = [pipe.run(doc, seed=s + 1) for s in range(args.runs)]
    med = {k: statistics.median(r.timings[k] for r in runs) for k in ("perturb", "remote", "extract",
                                                                      "overhead", "total")}
    toks = {k: statistics.median(getattr(r, k)["completion_tokens"] or 0 for r in runs) for k in ("remote", "local")}
    # perturbation alone, many repetitions (it is the only stage we own end to end)
    reps, t0 = 50, time.perf_counter()
    for i in range(reps):
        mech.perturb(doc, rng=None)
    perturb_only = (time.perf_counter() - t0) / reps
    out = {
        "document_units": args.units, "generated_tokens": args.tokens, "runs": args.runs,
        "median_s": med, "median_completion_tokens": toks,
        "perturb_only_mean_s": perturb_only,
        "perturb_plus_overhead_ms": 1000 * (med["perturb"] + med["overhead"]),
        "extract_ms_per_token": 1000 * med["extract"] / max(toks["local"], 1),
        "paper_extract_s_gpu_7b": PAPER_EXTRACT_S,
        "model": model.describe()["model"], "threads": model.n_threads or "default",
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"InferDPT pipeline, {args.units}-unit document, {args.tokens} generated tokens per model, "
          f"median of {args.runs} (SmolLM2-135M Q4_1 on CPU, in-process)")
    print(f"  perturb   {med['perturb'] * 1000:8.2f} ms   (perturb alone, mean of {reps}: {perturb_only * 1000:.2f} ms)")
    print(f"  remote    {med['remote']:8.2f} s    ({toks['remote']:.0f} tokens)")
    print(f"  extract   {med['extract']:8.2f} s    ({toks['local']:.0f} tokens; "
          f"{out['extract_ms_per_token']:.1f} ms/token)   paper: ~{PAPER_EXTRACT_S} s (GPU, 7B model)")
    print(f"  overhead  {med['overhead'] * 1000:8.2f} ms")
    print(f"  total     {med['total']:8.2f} s")
    flag = "meets" if out["perturb_plus_overhead_ms"] < 20 else "misses"
    print(f"  perturb + orchestration: {out['perturb_plus_overhead_ms']:.2f} ms ({flag} the 20 ms target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
