"""Retention against ε (1 … 16) for the text on the page: the share of its word units (punctuation
excluded) that come out of the mechanism unchanged.

* Cape: the exact expectation. A sampled unit ``x`` stays with ``Pr(x | x)`` from its row in context;
  the device logits do not depend on ε, so they are computed once and only the bucket law
  ``Pr(b) ∝ exp(ε·ū_b / (2Δu))`` is redone per ε. Units that bypass the sampler count 1 when kept,
  0 when dropped or replaced at random, and ``1/1000`` for a number in 1..1000 under ``digits=random``.
* Every other mechanism: estimated by perturbing the text ``R`` times at each ε, with
  ``R = clamp(⌈1500 / word units⌉, 5, 200)``; the standard error is at most ``0.5 / √(R · words)``
  (units of one run are not independent when a unit repeats, so this is a guide, not a bound).
  A mechanism without an ε (``mech.epsilon is None`` once built) is run once and its value repeated.

The computation stops after :data:`TIME_BUDGET_S` seconds and returns the ε values done so far.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dptext.mechanisms.base import Mechanism
from dptext.resources import is_digits, is_punctuation
from dptext.web.engine import WebError, build_like, same_unit, sampled_positions, segment_units

EPSILON_GRID = tuple(float(e) for e in range(1, 17))
TIME_BUDGET_S = 30.0
TARGET_UNITS = 1500


def word_positions(units: list[str]) -> list[int]:
    words = [i for i, t in enumerate(units) if not is_punctuation(t)]
    if not words:
        raise WebError("the text has no word units (only punctuation)", field="text")
    return words


def retention_curve(mech: Mechanism, text: str, rng: np.random.Generator, epsilons=EPSILON_GRID) -> dict:
    from dptext.mechanisms.cape import Cape

    units = segment_units(mech, text)
    words = word_positions(units)
    if isinstance(mech, Cape):
        return exact_cape(mech, text, units, words, epsilons)
    runs = min(200, max(5, math.ceil(TARGET_UNITS / len(words))))
    start, values = time.monotonic(), []
    for eps in epsilons:
        if mech.epsilon is None and values:
            values.append(values[0])
            continue
        m = mech if mech.epsilon is None else build_like(mech, eps)
        kept = 0
        for _ in range(runs):
            recs = m.perturb(text, rng=rng).units
            kept += sum(recs[i].action == "kept" or same_unit(m, recs[i].original, recs[i].output) for i in words)
        values.append(kept / (runs * len(words)))
        if time.monotonic() - start > TIME_BUDGET_S:
            break
    done = len(values)
    return {"epsilons": list(epsilons[:done]), "retention": values, "word_units": len(words),
            "method": f"estimated from {runs} runs per ε", "partial": done < len(epsilons)}


def exact_cape(mech, text: str, units: list[str], words: list[int], epsilons) -> dict:
    from dptext.mechanisms import cape

    pos, idx = sampled_positions(mech, units)
    seg = mech.segment(text)
    probs = np.zeros((len(epsilons), len(pos)))
    for s in range(0, len(pos), 64):  # 64 positions per utility matrix bounds memory
        p, i = pos[s : s + 64], idx[s : s + 64]
        u = mech.utilities(seg, p, i)
        for e, eps in enumerate(epsilons):
            b, counts, pr = cape.bucket_law(u, eps, mech.sensitivity, mech.n_buckets)
            probs[e, s : s + 64] = cape.rows_from_law(b, counts, pr)[np.arange(len(p)), i]
    base = np.zeros(len(units))  # units that bypass the sampler
    sampled = set(pos.tolist())
    for j, t in enumerate(units):
        reason = mech._policy_of(t)
        if reason == "digits!":  # a uniform integer in 1..1000 equals t only if t is one of them
            base[j] = 1e-3 if is_digits(t) and str(int(t)) == t and 1 <= int(t) <= 1000 else 0.0
        elif reason is not None:
            base[j] = 1.0
        elif j not in sampled:
            base[j] = 1.0 if mech.oov == "keep" else 0.0
    per_eps = np.tile(base, (len(epsilons), 1))
    per_eps[:, pos] = probs
    return {"epsilons": list(epsilons), "retention": per_eps[:, words].mean(axis=1).tolist(),
            "word_units": len(words), "method": "exact: mean over word units of Pr(x | x) in context",
            "partial": False}
