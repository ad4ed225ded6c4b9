"""SANTEXT and SANTEXT+ (Yue et al. 2021; SPEC 1.2).

``Pr(y | x) = exp(−ε·d(x, y)/2) / Σ_{y' ∈ V_s} exp(−ε·d(x, y')/2)`` for
``y ∈ V_s``, the sensitive set: the least frequent fraction ``w`` of ``V``
(SANTEXT: ``w = 1``). A sensitive ``x`` is always resampled; a non-sensitive
``x`` is resampled with probability ``p`` and kept otherwise (SANTEXT+
defaults ``p = 0.3``, ``w = 0.9``), so its row is ``(1 − p)·δ_x + p·Pr(·|x)``.

Rows are computed for the distinct units of a batch with one GEMM and kept as
CDFs in a bounded row store; sampling is a vectorised inverse-CDF search.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import check_probability
from dptext.mechanisms._rows import RowStore, gather_searchsorted
from dptext.mechanisms._vocab import corpus_key, least_frequent, vocabulary
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register


@register("santext")
class SanText(Mechanism):
    """SANTEXT: exponential mechanism on embedding distance over the whole vocabulary (metric DP)."""

    default_space = "glove-50d"
    default_w = 1.0
    default_p = 1.0

    def __init__(self, *, epsilon: float, corpus=None, w: float | None = None, p: float | None = None,
                 **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.w = check_probability(self.default_w if w is None else w, name="w (sensitive fraction)")
        self.p = check_probability(self.default_p if p is None else p, name="p (resampling probability)")
        self._corpus_key = corpus_key(corpus)
        self.vocab_mask, self.freqs = vocabulary(self.space, corpus)
        self.sensitive = least_frequent(self.vocab_mask, self.freqs, self.w)
        self.v_s = np.flatnonzero(self.sensitive)
        self.rows = RowStore(len(self.v_s), {"cdf": np.float32}, self._cdf_rows, n_units=self.space.size)

    def settings(self) -> dict:
        return {**super().settings(), "w": self.w, "p": self.p, "corpus": self._corpus_key}

    @property
    def input_mask(self) -> np.ndarray:
        return self.vocab_mask

    @property
    def output_mask(self) -> np.ndarray:
        return self.sensitive

    def _probs(self, ids: np.ndarray) -> np.ndarray:
        """``Pr(y|x)`` over ``V_s`` for each ``x`` in ``ids`` (float64, rows sum to 1)."""
        d = self.space.distances(ids, self.v_s).astype(np.float64)
        logit = -0.5 * self.epsilon * d
        logit -= logit.max(axis=1, keepdims=True)
        w = np.exp(logit)
        return w / w.sum(axis=1, keepdims=True)

    def _cdf_rows(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """Sampling CDFs (float32 weights, float64 running sums; error < 1e-6 per probability)."""
        logit = self.space.distances(ids, self.v_s)
        logit *= np.float32(-0.5 * self.epsilon)
        logit -= logit.max(axis=1, keepdims=True)
        np.exp(logit, out=logit)
        cdf = np.cumsum(logit, axis=1, dtype=np.float64)
        cdf /= cdf[:, -1:]
        return {"cdf": cdf.astype(np.float32)}

    def _prepare(self, idx: np.ndarray) -> None:
        for part in self.rows.batches(idx):
            self.rows.slots(idx[part])

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = idx.copy()
        redraw = self.sensitive[idx]
        if self.p < 1.0:
            redraw |= rng.random(len(idx)) < self.p
        else:
            redraw[:] = True
        pos = np.flatnonzero(redraw)
        for part in self.rows.batches(idx[pos]):
            sel = pos[part]
            slots = self.rows.slots(idx[sel])
            u = rng.random(len(sel)).astype(np.float32)
            j = gather_searchsorted(self.rows.slabs["cdf"], slots, u, len(self.v_s), side="right")
            out[sel] = self.v_s[np.minimum(j, len(self.v_s) - 1)]
        return out

    def transition(self, x) -> np.ndarray:
        return self.transition_rows(np.asarray([self.index_of(x)]))[0]

    def transition_rows(self, ids) -> np.ndarray:
        """Rows ``Pr(·|x)`` for many input indices at once (one GEMM), ``[len(ids), |V|]``."""
        ids = np.asarray(ids, dtype=np.int64)
        rows = np.zeros((len(ids), self.space.size), dtype=np.float64)
        rows[:, self.v_s] = self._probs(ids)
        keep = ~self.sensitive[ids]
        rows[keep] *= self.p
        rows[np.flatnonzero(keep), ids[keep]] += 1.0 - self.p
        return rows

    def privacy(self) -> PrivacyClaim:
        d_max = self.space.d_max
        scope = "metric DP: ln Pr(y|x) − ln Pr(y|x') ≤ ε·d(x, x') for all x, x', y"
        if self.w < 1.0 or self.p < 1.0:
            scope += ("; holds for resampled units; non-sensitive units are kept with probability "
                      f"1 − p = {1 - self.p:.2f}, which this bound does not cover")
        return PrivacyClaim(mechanism=self.name, epsilon=self.epsilon, kind="metric-dp",
                            bound=self.epsilon * d_max, scope=scope,
                            details={"d_max": d_max, "w": self.w, "p": self.p, "|V_s|": int(len(self.v_s))})


@register("santext+")
class SanTextPlus(SanText):
    """SANTEXT+: rarest 90% sensitive; frequent units resampled with p = 0.3, else kept."""

    default_w = 0.9
    default_p = 0.3
