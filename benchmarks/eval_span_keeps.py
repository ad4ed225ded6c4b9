"""Detected units sent unchanged: by a keep rule, and by a DP draw that returned the unit itself.

Runs the README's first example N times through the core (:class:`dptext.pipeline.Sanitizer`, the
path of ``dptext perturb --policy ...``) for each policy and each mechanism with a keep rule
(SANTEXT+: frequent words kept with probability 1 − p; CUSTEXT+: stopwords), and counts, over the
units that the entity detectors find (the ``entities`` policy's detection, also under ``all``, which
applies none):

* ``rule``: sent unchanged by a keep rule (action ``kept``, or SANTEXT+'s ``non-sensitive-kept``);
* ``self``: drawn by the sampler and came out as the input (compared ignoring case);
* ``expected self``: N × Σ_x Pr(x | x) of the DP branch (``dp_transition``; outside a span, SANTEXT+
  draws a frequent unit with probability p only), where the code has it, and ``z`` = (self − expected)
  / sd of that sum of Bernoulli counts.

Counts are computed from the per-unit records, not from the report's counters, so the same script
measures older code: ``PYTHONPATH=/work/main/src python benchmarks/eval_span_keeps.py`` (before) and
``PYTHONPATH=src python benchmarks/eval_span_keeps.py`` (after).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dptext.mechanisms.spec import MechanismSpec
from dptext.pipeline import Sanitizer, Segment
from dptext.privacy.policy import get_policy

TEXT = "The patient John Smith was admitted on Monday."
MECHANISMS = ("santext+", "custext+")


def unit_offsets(result, start: int) -> list[tuple[int, int]]:
    """Character range of each unit of a span's record, the span starting at ``start``."""
    out, pos = [], start
    for p in result._pieces:
        pos += len(p.ws)
        out.append((pos, pos + len(p.text)))
        pos += len(p.text)
    return out


def run(mechanism: str, policy: str, n: int, epsilon: float, entity_epsilon: float, seed: int,
        detected: list[tuple[int, int]]) -> dict:
    spec = MechanismSpec(mechanism=mechanism, epsilon=epsilon)
    opts = {"entity_epsilon": entity_epsilon} if policy == "tiered" else {}
    san = Sanitizer(spec, policy=get_policy(policy, **opts))
    rng = np.random.default_rng(seed)
    plan = [(s, e, eps) for s, e, private, eps, _, _ in san._plan(TEXT) if private and TEXT[s:e].strip()]
    fold = san.mechanism.space.case_insensitive
    counts = {"runs": n, "detected units": 0, "rule": 0, "self": 0, "expected self": None}
    expected, var, have_dp = 0.0, 0.0, True
    t0 = time.perf_counter()
    for i in range(n):
        out = san.sanitize([Segment(TEXT, True)], rng=rng)
        results = [r for r in out.results[0] if set(r._reasons) != {"public"}]  # perturbed spans only
        assert len(results) == len(plan), "records do not line up with the plan"
        for (start, _, eps), res in zip(plan, results):
            for (a, b), u in zip(unit_offsets(res, start), res.units):
                if not any(a < e and s < b for s, e in detected):
                    continue
                counts["detected units"] += 1
                if u.action == "kept" or u.reason == "non-sensitive-kept":
                    counts["rule"] += 1
                elif u.output is not None and (u.output.lower() == u.original.lower() if fold
                                               else u.output == u.original):
                    counts["self"] += 1
                if i == 0 and u.action == "perturbed" and u.reason not in ("digits", "oov"):
                    mech = san._mechanism_at(eps)
                    if hasattr(mech, "dp_transition"):
                        x = mech.index_of(u.original.lower() if fold else u.original)
                        p_self = float(mech.dp_transition(x)[x])
                        if policy == "all" and getattr(mech, "p", 1.0) < 1.0 and not mech.sensitive[x]:
                            p_self *= mech.p  # outside a span SANTEXT+ draws a frequent unit with prob. p only
                        expected += p_self
                        var += p_self * (1.0 - p_self)
                    else:
                        have_dp = False
    if have_dp:
        counts["expected self"] = round(n * expected, 2)
        counts["z"] = (counts["self"] - n * expected) / np.sqrt(n * var) if var > 0 else float("nan")
    counts["ms/run"] = round(1000 * (time.perf_counter() - t0) / n, 2)
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--entity-epsilon", type=float, default=1.0, help="the tiered policy's ε on detected spans")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    detected = [(s.start, s.end) for s in get_policy("entities").detect(TEXT)]
    print(f"text: {TEXT!r}; detected: {[TEXT[s:e] for s, e in detected]}; {args.runs} runs per row, "
          f"epsilon {args.epsilon:g} (tiered: {args.entity_epsilon:g} on detected spans)")
    print(f"{'mechanism':10s} {'policy':9s} {'detected units':>14s} {'kept by rule':>12s} {'drawn as self':>13s} "
          f"{'expected self':>13s} {'z':>6s} {'ms/run':>7s}")
    for mech in MECHANISMS:
        for pol in ("all", "entities", "tiered"):
            c = run(mech, pol, args.runs, args.epsilon, args.entity_epsilon, args.seed, detected)
            exp = "n/a" if c["expected self"] is None else f"{c['expected self']:.2f}"
            z = f"{c['z']:6.2f}" if "z" in c else f"{'n/a':>6s}"
            print(f"{mech:10s} {pol:9s} {c['detected units']:14d} {c['rule']:12d} {c['self']:13d} {exp:>13s} "
                  f"{z} {c['ms/run']:7.2f}")


if __name__ == "__main__":
    main()
