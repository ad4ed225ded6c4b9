"""Statistical helpers for tests: chi-square goodness of fit of samples against a row."""

from __future__ import annotations

import numpy as np
from scipy import stats


def chi2_pvalue(samples: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """p-value of Pearson's chi-square test of ``samples`` (indices) against ``probs``.

    Cells with expected count below ``min_expected`` are pooled into one cell,
    so the asymptotic chi-square law applies.
    """
    n = len(samples)
    counts = np.bincount(samples, minlength=len(probs)).astype(np.float64)
    expected = probs * n
    big = expected >= min_expected
    obs = list(counts[big])
    exp = list(expected[big])
    rest_e, rest_o = expected[~big].sum(), counts[~big].sum()
    if rest_e > 0:
        obs.append(rest_o)
        exp.append(rest_e)
    if rest_e == 0 and rest_o > 0:
        return 0.0  # a sample outside the support
    if len(obs) < 2:
        return 1.0
    exp = np.asarray(exp)
    obs = np.asarray(obs)
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)
