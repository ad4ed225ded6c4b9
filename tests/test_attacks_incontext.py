"""Bayesian attacks on contextual mechanisms: ``Pr(y | x, c)`` in the unit's real context (SPEC 3).

The vectorised columns of ``dptext.attacks._incontext`` are checked against the mechanisms' own exact
rows (``_row_in_context``), computed one candidate at a time with the candidate written into the prompt.
"""

from __future__ import annotations

import numpy as np
import pytest

from dptext.attacks import get_attack, observe
from dptext.attacks._incontext import column_in_context, is_contextual, substitute
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.base import Mechanism

CONTEXT = "My doctor said the biopsy results from the hospital were normal, so we celebrated with dinner."
PRIVATE = ["My doctor said the biopsy results from the hospital were normal.",
           "We celebrated with a quiet dinner at home on Friday.",
           "The nurse called my sister about the results of the scan."]


def _setup(mech, rng):
    seg = Mechanism.segment(mech, CONTEXT)
    pos, idx = mech.vocab_positions(seg)
    i, x0 = int(pos[3]), int(idx[3])
    domain = np.flatnonzero(mech.input_mask)
    cand = np.unique(np.r_[x0, rng.choice(domain, size=24, replace=False)])
    return seg, i, x0, cand


def _exact(mech, seg, i, cand, y):
    units = mech.space.units
    return np.array([mech._row_in_context(substitute(seg, i, units[x]), i, int(x))[y] for x in cand])


def test_cape_columns_equal_its_exact_rows_in_context():
    mech = get_mechanism("cape", epsilon=4, seed=0)
    assert is_contextual(mech)
    seg, i, x0, cand = _setup(mech, np.random.default_rng(0))
    for y in (x0, int(mech.sample(mech.space.units[x0], 1, context=CONTEXT, position=i)[0])):
        col = column_in_context(mech, seg, i, cand, y, chunk=7)
        exact = _exact(mech, seg, i, cand, y)
        assert col.shape == (len(cand),) and exact.max() > 0
        np.testing.assert_allclose(col, exact, rtol=1e-4, atol=1e-9)


@pytest.mark.parametrize("name", ["stencil", "punctuated-stencil"])
def test_stencil_columns_equal_its_exact_rows_in_context(name):
    mech = get_mechanism(name, space="smollm2")
    seg, i, x0, cand = _setup(mech, np.random.default_rng(1))
    ys = {int(mech._row_in_context(substitute(seg, i, mech.space.units[x]), i, int(x)).argmax()) for x in cand[:6]}
    for y in ys:
        col = column_in_context(mech, seg, i, cand, y, chunk=5)
        np.testing.assert_array_equal(col, _exact(mech, seg, i, cand, y))
        assert col.sum() >= 1  # the candidate that produced y maps to it


def test_bound_on_stencil_in_context_beats_the_lone_unit_stand_in():
    """Stencil is deterministic given the prompt: in the true context, the bound keeps only candidates that
    map to the observed unit, so it recovers most originals of a 3-sentence corpus (about 30 candidates,
    measured 27 of 32); with one-unit-prompt rows (y = the nearest other unit of x alone) the same bound
    recovers fewer (17 of 32). Paired check: the lead is at least 2 standard errors (sqrt of discordant)."""
    mech = get_mechanism("stencil", space="smollm2", sigma=0.8)
    obs = observe(mech, PRIVATE, rng=np.random.default_rng(0))
    ctx = get_attack("bayes-bound", mech, k=1).fit(private=PRIVATE)
    lone = get_attack("bayes-bound", mech, k=1, rows="lone").fit(private=PRIVATE)
    assert ctx.rows == "context" and lone.rows == "lone" and obs.n_targets >= 20
    truth = [t.casefold() for t in obs.truth]
    hit_c = np.array([bool(r) and r[0].casefold() == t for r, t in zip(ctx.rank(obs), truth)])
    hit_l = np.array([bool(r) and r[0].casefold() == t for r, t in zip(lone.rank(obs), truth)])
    discordant = max(int((hit_c != hit_l).sum()), 1)
    assert hit_c.mean() >= 0.75 and hit_c.sum() - hit_l.sum() >= 2 * np.sqrt(discordant), (hit_c.mean(), hit_l.mean())
