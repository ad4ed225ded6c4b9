"""Evaluation benchmark: wall time of datasets, metrics and the privacy audit.

Usage: python benchmarks/bench_metrics.py [--audit-pairs 200] [--texts 1000] [--skip-models]

Prints one line per step: dataset loads (the Wikipedia parse runs once, then its
cache is read), text metrics over ``--texts`` tweets (diversity, Rouge-L, n-gram
leakage), WordNet synonym proportion (table load, then 10,000 pairs), MiniLM
embedding rate and MAUVE of 100 vs 100 texts, and ``dptext audit`` per mechanism at
ε = 3 with the default settings (``--audit-pairs`` pairs, 3 x 20,000 fit draws).
Times are wall seconds on whatever machine runs it (no targets are asserted).
"""

from __future__ import annotations

import argparse
import time


def timed(label: str, fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    print(f"{label:48s} {time.perf_counter() - t0:8.2f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit-pairs", type=int, default=200)
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--skip-models", action="store_true", help="skip MiniLM/MAUVE")
    args = ap.parse_args()

    from dptext.data import builtin, get_dataset
    from dptext.mechanisms import get_mechanism
    from dptext.metrics import diversity, ngram_leakage, rouge_l_f1, synonym_proportion
    from dptext.metrics.audit import audit_mechanism

    tweets = timed("load tweets (CSV parse + clean)", get_dataset, "tweets")
    timed("load wiki (parse once, then cache)", builtin.load_wiki)
    timed("load news", get_dataset, "news")
    texts = list(tweets.sample(args.texts, seed=0).texts)
    shifted = texts[1:] + texts[:1]
    timed(f"diversity x {len(texts)}", lambda: [diversity(t) for t in texts])
    timed(f"Rouge-L F1 x {len(texts)}", lambda: [rouge_l_f1(a, b) for a, b in zip(texts, shifted)])
    timed(f"n-gram leakage x {len(texts)}", ngram_leakage, texts, shifted)
    mech = get_mechanism("custext", epsilon=3, seed=0)
    words = [w for t in texts for w in t.split()][:10000]
    pairs = [(w, mech.perturb([w]).text) for w in words[:200]] * 50
    timed("synonym proportion, first call (table)", synonym_proportion, pairs[:10])
    timed(f"synonym proportion x {len(pairs)} pairs", synonym_proportion, pairs)
    if not args.skip_models:
        from dptext.metrics.quality import embed, mauve_score

        timed("MiniLM load", embed, ["warm up"])
        e = timed(f"MiniLM embed x {len(texts)} tweets", embed, texts)
        timed("MAUVE 100 vs 100 (features given)", mauve_score, e[:100], e[100:200])
    for name in ("rantext", "santext", "santext+", "custext", "custext+"):
        m = get_mechanism(name, epsilon=3, seed=0)
        res = timed(f"audit {name} eps=3 pairs={args.audit_pairs}", audit_mechanism, m, pairs=args.audit_pairs,
                    seed=0)
        print(f"    audited {res.audited:.4g} vs claim {res.claimed} -> {'PASS' if res.passed else 'FAIL'}"
              f"; unrestricted {res.unrestricted:.4g}", flush=True)


if __name__ == "__main__":
    main()
