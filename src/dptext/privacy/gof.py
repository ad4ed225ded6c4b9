"""Goodness of fit of a mechanism's sampler against its own rows (docs/algorithms.md, "Audit")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass
class GofResult:
    unit: str
    samples: int
    statistic: float
    dof: int
    pvalue: float
    outside_support: int
    passed: bool


# ----- goodness of fit -------------------------------------------------------------------------------------
def binned_counts(counts: np.ndarray, expected: np.ndarray, min_expected: float = 5.0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Chi-square cells: outputs with expected count ``>= min_expected`` alone; the others, in
    order of decreasing probability, merged greedily into bins of expected count ``>= min_expected``
    (a short last bin joins the one before), so near-uniform rows keep many cells and the test
    keeps its power in the tail. Zero-probability outputs are left out."""
    big = expected >= min_expected
    obs, exp = list(counts[big]), list(expected[big])
    small = np.flatnonzero(~big & (expected > 0))
    order = small[np.argsort(-expected[small], kind="stable")]
    acc_e = acc_o = 0.0
    n_small = 0
    for e, o in zip(expected[order].tolist(), counts[order].tolist()):
        acc_e += e
        acc_o += o
        if acc_e >= min_expected:
            exp.append(acc_e)
            obs.append(acc_o)
            acc_e = acc_o = 0.0
            n_small += 1
    if acc_e > 0 or acc_o > 0:  # short tail: join the last small bin (or stand alone)
        if n_small:
            exp[-1] += acc_e
            obs[-1] += acc_o
        else:
            exp.append(acc_e)
            obs.append(acc_o)
    return np.asarray(obs, dtype=np.float64), np.asarray(exp, dtype=np.float64)


def goodness_of_fit(mech, x, samples: int, rng: np.random.Generator, row: np.ndarray | None = None,
                    alpha: float = 1e-3, support_slack: float | None = None, context: str | None = None) -> GofResult:
    """Pearson chi-square of ``samples`` sampler draws for unit ``x`` against ``transition(x)``
    (cells from :func:`binned_counts`).

    Draws where the row is 0 fail the test outright, except a share ``support_slack`` of them
    when the row is numerically integrated (default ``1/integration_points`` for mechanisms
    with a quadrature, e.g. RANTEXT: its last quadrature cell cannot resolve the far tail of
    ``d*``, so rare far draws land where the integrated row is 0). Tolerated draws are left
    out of the chi-square and reported in ``outside_support``.
    """
    i = mech.index_of(x)
    if context is None:
        p = np.asarray(mech.transition(i) if row is None else row, dtype=np.float64)
        draws = np.asarray(mech.sample(i, samples, rng), dtype=np.int64)
    else:  # a contextual mechanism inside a real prompt
        p = np.asarray(mech.transition(i, context=context) if row is None else row, dtype=np.float64)
        draws = np.asarray(mech.sample(i, samples, rng, context=context), dtype=np.int64)
    counts = np.bincount(draws, minlength=len(p)).astype(np.float64)
    if support_slack is None:
        pts = getattr(mech, "integration_points", None)
        support_slack = 1.0 / pts if pts else 0.0
    outside = int(counts[p <= 0].sum())
    n = samples - outside
    obs, exp = binned_counts(counts, p * n)
    unit = mech.space.units[i]
    if outside > support_slack * samples:
        return GofResult(unit, samples, float("inf"), len(obs) - 1, 0.0, outside, False)
    if len(obs) < 2:
        return GofResult(unit, samples, 0.0, 0, 1.0, outside, True)
    exp = exp * (obs.sum() / exp.sum())
    res = stats.chisquare(obs, exp)
    pv = float(res.pvalue)
    return GofResult(unit, samples, float(res.statistic), len(obs) - 1, pv, outside, pv >= alpha)


