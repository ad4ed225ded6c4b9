"""Fidelity: every stochastic mechanism's fast sampler against a literal transcription of its paper.

Two-sample chi-square tests (outputs, and output distance deciles) at fixed seeds, 3 units × 2 ε
per mechanism; the broken variants of ``reference/broken.py`` must be caught by the reference
comparison or by the audit. Cape's comparison runs with its device model in ``test_cape.py``.
"""

import json

import numpy as np
import pytest

from dptext.mechanisms import get_mechanism
from dptext.privacy import reference as ref
from dptext.privacy.audit import audit_mechanism
from dptext.privacy.fidelity import compare, homogeneity, reference_units
from reference.broken import (AggressiveSharedClaimCusText, DoubledSanText, GlobalDeltaRanText, LessEqualRanText,
                              TenfoldScaleRanText)

DRAWS = 2000
LEVEL = 1e-3
CASES = {  # mechanism: (two ε values, extra options)
    "rantext": ((3.0, 6.0), {}),
    "santext": ((1.0, 3.0), {}),
    "santext+": ((1.0, 3.0), {}),
    "custext": ((1.0, 6.0), {}),
    "custext+": ((1.0, 6.0), {}),
    "noise-mapper": ((10.0, 30.0), {"space": "glove-50d"}),
}
PVALUES: dict = {}


def units_for(mech, seed):
    rng = np.random.default_rng(seed)
    if mech.name == "santext+":  # one always-resampled unit and two frequent (keep-or-resample) ones
        sens = np.flatnonzero(mech.sensitive & mech.input_mask)
        freq = np.flatnonzero(~mech.sensitive & mech.input_mask)
        return [int(rng.choice(sens))] + [int(u) for u in rng.choice(freq, 2, replace=False)]
    return reference_units(mech, 3, rng)


@pytest.mark.parametrize("name", list(CASES))
def test_fast_sampler_matches_the_literal_reference(name):
    epsilons, opts = CASES[name]
    for eps in epsilons:
        mech = get_mechanism(name, epsilon=eps, seed=0, **opts)
        res = compare(mech, units_for(mech, 11), samples=DRAWS, seed=5, alpha=LEVEL)
        PVALUES[(name, eps)] = [(r.unit, r.pvalue) for r in res]
        assert all(r.passed for r in res), [r.to_dict() for r in res]
        assert sum(r.distinct >= 3 for r in res) >= 2  # most checked rows spread over several outputs
    print(json.dumps({f"{k[0]}@{k[1]}": v for k, v in PVALUES.items() if k[0] == name}))


def test_homogeneity_closed_form():
    # two samples over two categories, 60/40 vs 40/60 of 100 each: Pearson statistic 8 with one dof
    a = np.array([0] * 60 + [1] * 40)
    b = np.array([0] * 40 + [1] * 60)
    stat, dof, p = homogeneity(a, b)
    assert (stat, dof) == (pytest.approx(8.0), 1) and p == pytest.approx(0.004677734981047266)
    assert homogeneity(a, a)[2] == pytest.approx(1.0)


def test_rantext_rows_at_fixed_dstar_are_the_strict_list():
    mech = get_mechanism("rantext", epsilon=3.0, seed=0)
    x = mech.index_of("house")
    dist = mech.space.distances([x])[0].astype(np.float64)
    d2 = float(np.sort(np.unique(dist))[2])  # exactly the second-nearest distance: excluded by "<"
    row = mech.transition(x, dstar=d2)
    assert set(np.flatnonzero(row > 0)) == set(np.flatnonzero(dist < d2))
    np.testing.assert_allclose(row, ref.rantext_row_at(dist, 3.0, d2), atol=1e-12)


# ----- broken variants are caught ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [TenfoldScaleRanText, GlobalDeltaRanText])
def test_wrong_laplace_scale_is_caught_by_the_reference(cls):
    mech = cls(epsilon=6.0, seed=0)
    res = compare(mech, ["house", "doctor"], samples=DRAWS, seed=5, alpha=LEVEL)
    assert not any(r.passed for r in res) and max(r.pvalue for r in res) < 1e-6, [r.to_dict() for r in res]
    assert all(r.pinned["passed"] for r in res)  # its rows at a fixed d* are right: only the law of d* is off
    audit = audit_mechanism(mech, pairs=10, samples=3000, gof_units=1, mixture_pairs=0, seed=2)
    assert audit.claim_holds  # the ε claim still holds: only fidelity notices


def test_less_equal_list_is_caught_by_the_reference():
    res = compare(LessEqualRanText(epsilon=3.0, seed=0), ["house"], samples=500, seed=5, alpha=LEVEL)
    assert not res[0].passed and res[0].pinned["support_mismatches"] > 0


def test_santext_at_twice_epsilon_is_caught():
    mech = DoubledSanText(epsilon=3.0, seed=0)
    audit = audit_mechanism(mech, pairs=20, samples=3000, gof_units=1, seed=2)
    assert audit.gof_passed and not audit.claim_holds and audit.audited > 3.0 + 1e-3
    res = compare(mech, ["house", "doctor"], samples=DRAWS, seed=5, alpha=LEVEL)
    assert not any(r.passed for r in res), [r.to_dict() for r in res]


def test_aggressive_lists_claiming_shared_scope_are_caught_by_the_audit():
    audit = audit_mechanism(AggressiveSharedClaimCusText(epsilon=3.0, seed=0), pairs=20, samples=3000,
                            gof_units=1, seed=2)
    shared = audit.extra["list_sharing"]
    assert shared["violations"] > 0.5 * shared["units"] and not audit.claim_holds and not audit.passed
    real = audit_mechanism(get_mechanism("custext", epsilon=3.0, seed=0), pairs=20, samples=3000, gof_units=1, seed=2)
    assert real.extra["list_sharing"]["violations"] == 0 and real.passed
