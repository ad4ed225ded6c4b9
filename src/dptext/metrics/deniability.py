"""The LREC-COLING 2024 comparative analysis's measures (docs/algorithms.md, "LREC-COLING 2024 measures").

Meisenbacher et al., "A Comparative Analysis of Word-Level Metric Differential Privacy" (LREC-COLING
2024), compare word-level mechanisms by perturbation percentage, plausible deniability (the
``N_w`` / ``S_w`` statistics of Feyisetan et al., WSDM 2020), cosine similarity of the texts and
downstream accuracy. Here:

* **Perturbation percentage** ``PP = #{units with y ≠ x} / #units`` over the (original, output)
  pairs of the perturbed documents (case-folded; a dropped unit counts as perturbed; punctuation
  kept by policy is left out). It is ``1 − retention``.
* **Plausible deniability**: for each probe word ``w``, ``n`` independent draws ``y_1..y_n`` of
  ``M(w)``; ``N_w = #{k : y_k = w}`` (how often ``w`` comes back unchanged, out of ``n``) and
  ``S_w = |{y_1, …, y_n}|`` (the effective support: distinct outputs). Reported: the mean and
  median of each over the probe words, and ``N_w / n``. For the identity map ``N_w = n`` and
  ``S_w = 1``; for a map uniform over ``k`` outputs ``E[N_w] = n/k`` (if ``w`` is one of them) and
  ``E[S_w] = k(1 − (1 − 1/k)^n)``.
* **Cosine similarity**: mean over documents of ``cos(e(x_i), e(y_i))``, ``e`` the L2-normalised
  all-MiniLM-L6-v2 sentence embedding of the raw and the perturbed document.

Downstream accuracy is :func:`dptext.metrics.classify.linear_head_accuracy`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.errors import DPTextError
from dptext.metrics.text import _as_pairs


def perturbation_percentage(pairs_or_results) -> float:
    """Share of units whose output differs from the original (``1 − retention``); NaN for no units."""
    pairs = _as_pairs(pairs_or_results, False)
    if not pairs:
        return float("nan")
    changed = sum(1 for x, y in pairs if y is None or str(y).strip().casefold() != str(x).strip().casefold())
    return changed / len(pairs)


def deniability_counts(inputs, outputs) -> tuple[np.ndarray, np.ndarray]:
    """``(N_w, S_w)`` per row: ``inputs[i]`` is the word's id, ``outputs[i]`` its ``n`` draws (any ids)."""
    x = np.asarray(inputs)
    y = np.asarray(outputs)
    if y.ndim != 2 or x.ndim != 1 or len(x) != len(y):
        raise DPTextError(f"need inputs [k] and outputs [k, n]; got shapes {x.shape} and {y.shape}")
    if not y.shape[1]:
        raise DPTextError("need at least one draw per word")
    n_w = (y == x[:, None]).sum(axis=1)
    s = np.sort(y, axis=1)
    s_w = 1 + (s[:, 1:] != s[:, :-1]).sum(axis=1)
    return n_w.astype(np.int64), s_w.astype(np.int64)


def deniability_summary(n_w: np.ndarray, s_w: np.ndarray, n_draws: int) -> dict:
    """Mean / median of ``N_w`` and ``S_w`` over the probe words, and ``N_w / n`` (NaN when empty)."""
    if not len(n_w):
        return {"n_w_mean": float("nan"), "s_w_mean": float("nan"), "n_units": 0, "n_draws": int(n_draws)}
    return {"n_w_mean": float(n_w.mean()), "n_w_median": float(np.median(n_w)),
            "n_w_rate": float(n_w.mean() / n_draws),
            "s_w_mean": float(s_w.mean()), "s_w_median": float(np.median(s_w)),
            "n_units": int(len(n_w)), "n_draws": int(n_draws)}


def plausible_deniability(mechanism, units: Sequence, n_draws: int = 200,
                          rng: np.random.Generator | None = None) -> dict:
    """``N_w`` / ``S_w`` of ``mechanism`` for each unit (strings or vocabulary indices), summarised.

    One vectorised ``_sample`` call draws ``n_draws`` outputs per unit (every branch of the
    mechanism, e.g. SANTEXT+'s keep branch, as in the text it perturbs).
    """
    n_draws = int(n_draws)
    if n_draws < 1:
        raise DPTextError(f"n_draws must be >= 1, got {n_draws}")
    idx = np.asarray([mechanism.index_of(u) for u in units], dtype=np.int64)
    if not len(idx):
        return deniability_summary(np.zeros(0), np.zeros(0), n_draws)
    out = mechanism._sample(np.repeat(idx, n_draws), rng or mechanism.rng).reshape(len(idx), n_draws)
    return deniability_summary(*deniability_counts(idx, out), n_draws)


def cosine_similarity(originals, perturbed) -> float:
    """Mean ``cos(e(x_i), e(y_i))`` of raw and perturbed documents (MiniLM, or given ``[n, d]`` features)."""
    from dptext.metrics.quality import pairwise_cosine

    c = pairwise_cosine(originals, perturbed)
    return float(c.mean()) if len(c) else float("nan")


# ----- downstream accuracy and cosine similarity on one perturbation of a train/test split --------------------
_CLEAN: dict[tuple, np.ndarray] = {}  # MiniLM features of clean text lists, kept for the process (a sweep's cells)


def _clean_features(texts: list[str]) -> np.ndarray:
    from dptext.metrics.quality import embed

    key = (len(texts), hash(tuple(texts)))
    if key not in _CLEAN:
        _CLEAN[key] = embed(texts)
    return _CLEAN[key]


def downstream(train_texts: Sequence[str], train_labels: Sequence[str], test_texts: Sequence[str],
               test_labels: Sequence[str], perturb, *, l2: float = 1e-3, seed: int = 0) -> dict:
    """MiniLM + linear head accuracy and cosine similarity from one perturbation of a train/test split.

    ``all``: head trained and tested on perturbed text; ``test``: trained on clean, tested on
    perturbed; ``clean``: the non-private reference; ``cosine``: mean ``cos(e(x_i), e(y_i))`` over
    the test texts. Clean features are computed once per process, so a sweep embeds only the
    ``n_train + n_test`` perturbed texts per cell.
    """
    from dptext.metrics.classify import LinearHead
    from dptext.metrics.quality import embed, pairwise_cosine

    if len(train_texts) != len(train_labels) or len(test_texts) != len(test_labels):
        raise DPTextError("texts and labels differ in length")
    train_texts, test_texts = list(train_texts), list(test_texts)
    x_tr, x_te = _clean_features(train_texts), _clean_features(test_texts)
    p_tr, p_te = embed(perturb(train_texts)), embed(perturb(test_texts))
    clean_head = LinearHead(l2=l2, seed=seed).fit(x_tr, train_labels)
    return {"all": LinearHead(l2=l2, seed=seed).fit(p_tr, train_labels).accuracy(p_te, test_labels),
            "test": clean_head.accuracy(p_te, test_labels),
            "clean": clean_head.accuracy(x_te, test_labels),
            "cosine": float(pairwise_cosine(x_te, p_te).mean()) if len(test_texts) else float("nan")}
