"""Attack benchmark: set-up time and seconds per 1,000 attacked units, per attack.

Usage: python benchmarks/bench_attacks.py [--units 1000] [--pairs 10000] [--skip-lm] [--finetune-pairs 0]
       python benchmarks/bench_attacks.py --in-context 500   # rows in context only (Cape, Stencil)

Data: sentences of the Lee news corpus (gensim test data); even sentences are
the private corpus, odd ones the adversary's shadow corpus. Mechanisms:
SANTEXT+ (ε = 2, glove-50d, vocabulary of the whole Lee corpus) for the
Bayesian, KNN, frequency and contextual attacks; RANTEXT (ε = 2, cl100k-11k)
for KNN on an 11k vocabulary; the noise mapper for the nearest-neighbour
attacker; 2-Random for the beam oracle. "set-up" is the one-time part
(neighbour tables, transition rows, shadow sanitizations, detector training);
"attack" is ``rank`` on the attacked units afterwards. Caches are cold: the
run uses a throw-away cache directory for attack artefacts (spaces are read
from ``$DPTEXT_CACHE_DIR``).

Targets: KNN >= 50,000 units/s; context-free Bayesian >= 5,000 units/s;
detector training on 10,000 pairs <= 10 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np


def lee_sentences() -> list[str]:
    import gensim

    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    text = path.read_text("utf-8", errors="replace")
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 20 <= len(s.strip()) <= 200]


def row(name: str, setup: float, attack: float, n: int, rep=None, note: str = "") -> None:
    rate = n / attack if attack > 0 else float("inf")
    asr = f"{rep.asr_at_1:.3f}/{rep.asr_at_k:.3f}" if rep is not None else "-"
    print(f"{name:34s} setup {setup:8.2f}s  attack {attack:8.3f}s for {n:5d} units  "
          f"{rate:10.0f} units/s  ASR@1/@5 {asr}  {note}", flush=True)


def timed(att, obs, shadow, rng, private=None):
    from dptext.attacks import score

    t0 = time.perf_counter()
    att.fit(shadow, private=private, rng=rng)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    ranking = att.rank(obs)
    dt = time.perf_counter() - t0
    rep = score(obs.truth, ranking, k=5)
    return setup, dt, rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=10_000, help="detector training pairs (0 = skip)")
    ap.add_argument("--finetune-pairs", type=int, default=0, help="also time encoder fine-tuning on N pairs")
    ap.add_argument("--skip-lm", action="store_true", help="skip masked / LLM / oracle attacks")
    ap.add_argument("--in-context", type=int, default=0, metavar="N",
                    help="only time Bayesian columns in context for Cape and Stencil over N candidates")
    args = ap.parse_args()
    if args.in_context:
        return in_context(args.in_context)

    tmp = tempfile.mkdtemp(prefix="dptext-bench-attacks-")
    from dptext import cache

    spaces_root = cache.cache_dir()
    # attack artefacts go to a cold cache; spaces come from the usual one
    os.environ["DPTEXT_CACHE_DIR"] = tmp
    for sub in ("spaces",):
        if (spaces_root / sub).exists():
            os.symlink(spaces_root / sub, Path(tmp) / sub)

    from dptext.attacks import get_attack, observe
    from dptext.mechanisms import get_mechanism

    sents = lee_sentences()
    private, shadow = sents[0::2], sents[1::2]
    rng = np.random.default_rng(0)
    n = args.units
    print(f"Lee corpus: {len(private)} private / {len(shadow)} shadow sentences; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")

    t0 = time.perf_counter()
    mech = get_mechanism("santext+", epsilon=2, corpus=sents, seed=1)
    obs = observe(mech, private, rng=rng, max_targets=n)
    print(f"SANTEXT+ eps=2 glove-50d: |V| = {int(mech.input_mask.sum())}, |V_s| = {int(mech.output_mask.sum())}; "
          f"{obs.n_targets} units observed in {time.perf_counter() - t0:.2f}s")
    for name, kw in (("knn", {}), ("bayes", {}), ("bayes-bound", {}), ("frequency", {"repeats": 5})):
        att = get_attack(name, mech, k=5, **kw)
        setup, dt, rep = timed(att, obs, shadow, rng, private)
        row(f"{name} (santext+)", setup, dt, obs.n_targets, rep)
        if name == "bayes":
            t0 = time.perf_counter()
            att.rank(obs)
            row("bayes (santext+, warm 2nd pass)", 0.0, time.perf_counter() - t0, obs.n_targets)

    rt = get_mechanism("rantext", epsilon=2, seed=1)
    obs_rt = observe(rt, private, rng=rng, max_targets=n)
    setup, dt, rep = timed(get_attack("knn", rt, k=5), obs_rt, shadow, rng)
    row("knn (rantext, cl100k-11k)", setup, dt, obs_rt.n_targets, rep)

    nm = get_mechanism("noise-mapper", eta=200, seed=1)
    obs_nm = observe(nm, private, rng=rng, max_targets=n)
    setup, dt, rep = timed(get_attack("nn", nm, k=5), obs_nm, shadow, rng)
    row("nn (noise mapper eta=200, smollm2)", setup, dt, obs_nm.n_targets, rep, "Pr@5 = ASR@5")

    if args.pairs:
        att = get_attack("contextual", mech, k=5, pool=10, repeats=10, max_pairs=args.pairs)
        setup, dt, rep = timed(att, obs, shadow, rng)
        row("contextual (santext+, frozen MiniLM)", setup, dt, obs.n_targets, rep,
            f"detector: {att.n_pairs} pairs trained in {att.detector.train_seconds:.1f}s "
            f"(incl. encoding), final loss {np.mean(att.detector.history[-10:]):.3f}")
    if args.finetune_pairs:
        att = get_attack("contextual", mech, k=5, pool=10, repeats=10, max_pairs=args.finetune_pairs,
                         detector="finetune")
        t0 = time.perf_counter()
        att.fit(shadow, rng=rng)
        row("contextual (fine-tuned MiniLM) fit", time.perf_counter() - t0, 0.0, 0, None,
            f"{att.n_pairs} pairs, 1 epoch, training {att.detector.train_seconds:.1f}s "
            f"(= {att.detector.train_seconds / max(att.n_pairs, 1) * 10_000 / 60:.1f} min per 10,000 pairs)")

    if not args.skip_lm:
        from dptext.attacks.base import Observed

        small = Observed(obs.outputs, obs.originals, obs.ws, obs.sent[:50], obs.pos[:50])
        setup, dt, rep = timed(get_attack("masked", mech, k=5, n_candidates=10), small, shadow, rng)
        row("masked (SmolLM2 causal fill)", setup, dt, small.n_targets, rep)
        setup, dt, rep = timed(get_attack("llm", mech, k=5), small, shadow, rng)
        row("llm (SmolLM2 chat, in-process)", setup, dt, small.n_targets, rep)
        mp = get_mechanism("2-random", seed=3)
        obs_mp = observe(mp, private[:10], rng=rng)
        att = get_attack("oracle", mp, k=5, max_beam=16)
        setup, dt, rep = timed(att, obs_mp, shadow, rng)
        d = att.details(obs_mp, None)
        row("oracle (2-random, 10 sentences)", setup, dt, obs_mp.n_targets, rep,
            f"MRR {d['mrr_sentence']:.2f} Pr@5 {d['pr_at_5_sentence']:.2f} edit {d['edit_distance']:.2f}")


def in_context(n_cand: int, n_targets: int = 3) -> None:
    """Seconds per attacked unit for ``Pr(y | x, c)`` over ``n_cand`` candidates (the Bayesian attacks'
    cost on contextual mechanisms), Cape (ε = 4, SmolLM2 device) and Stencil(9, 0.8), smollm2 space."""
    from dptext.attacks._incontext import column_in_context
    from dptext.mechanisms import get_mechanism
    from dptext.mechanisms.base import Mechanism

    text = "My doctor said the biopsy results from the hospital were normal, so we celebrated with dinner."
    print(f"load average {os.getloadavg()[0]:.1f}; {n_cand} candidates, {n_targets} targets")
    for name, kw in (("cape", {"epsilon": 4}), ("stencil", {"sigma": 0.8})):
        mech = get_mechanism(name, seed=0, **kw)
        seg = Mechanism.segment(mech, text)
        pos, idx = mech.vocab_positions(seg)
        cand = np.random.default_rng(0).choice(np.flatnonzero(mech.input_mask), size=n_cand, replace=False)
        column_in_context(mech, seg, int(pos[0]), cand[:8], int(idx[0]))  # warm-up (model load, caches)
        t0 = time.perf_counter()
        for t in range(n_targets):
            column_in_context(mech, seg, int(pos[t + 1]), cand, int(idx[t + 1]))
        per = (time.perf_counter() - t0) / n_targets
        print(f"{name:8s} {per:8.3f} s per attacked unit over {n_cand} candidates "
              f"(= {per / n_cand * 1e3:.2f} ms per candidate; |V| = {mech.space.size})", flush=True)


if __name__ == "__main__":
    main()
