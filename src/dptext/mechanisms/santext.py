"""SANTEXT and SANTEXT+ (Yue et al. 2021; docs/algorithms.md, SANTEXT).

``Pr(y | x) = exp(−ε·d(x, y)/2) / Σ_{y' ∈ V_s} exp(−ε·d(x, y')/2)`` for
``y ∈ V_s``, the sensitive set: the least frequent fraction ``w`` of ``V``
(SANTEXT: ``w = 1``). A sensitive ``x`` is always resampled; a non-sensitive
``x`` is resampled with probability ``p`` and kept otherwise (SANTEXT+
defaults ``p = 0.3``, ``w = 0.9``), so its row is ``(1 − p)·δ_x + p·Pr(·|x)``.

Sampling is exact and needs no per-unit row: draws come from the space's
memory-mapped neighbour table with the envelope-and-rejection sampler of
``dptext.mechanisms._rows`` (``c = ε/2``, members ``V_s``). When ``V_s`` is a
small or sparse part of the space (a small corpus), rows over ``V_s`` are
cheap and an inverse-CDF draw over them is used instead. Every weight is
computed relative to the row's largest one (``exp(−ε·(d − d_min)/2)``), so any
finite ε is safe.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import check_probability
from dptext.mechanisms._rows import TableDraws, block_bounds, nearest_member_distance, sample_ball
from dptext.mechanisms._vocab import corpus_key, least_frequent, vocabulary
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

DENSE_MAX = 4096  # |V_s| up to which rows over V_s are drawn from directly
DENSE_CELLS = 2**23  # rows × |V_s| per dense chunk


@register("santext")
class SanText(TableDraws, Mechanism):
    """SANTEXT: exponential mechanism on embedding distance over the whole vocabulary (metric DP)."""

    default_space = "glove-50d"
    default_w = 1.0
    default_p = 1.0
    contextual = False
    dp = True
    params = {"corpus": None, "w": None, "p": None}

    def __init__(self, *, epsilon: float, corpus=None, w: float | None = None, p: float | None = None,
                 **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.w = check_probability(self.default_w if w is None else w, name="w (sensitive fraction)")
        self.p = check_probability(self.default_p if p is None else p, name="p (resampling probability)")
        self._corpus_key = corpus_key(corpus)
        self.vocab_mask, self.freqs = vocabulary(self.space, corpus)
        self.sensitive = least_frequent(self.vocab_mask, self.freqs, self.w)
        self.v_s = np.flatnonzero(self.sensitive)
        self._everything = len(self.v_s) == self.space.size
        self.dense = len(self.v_s) <= DENSE_MAX or len(self.v_s) < 0.5 * self.space.size
        self._progress = kwargs.get("progress")

    def settings(self) -> dict:
        return {**super().settings(), "w": self.w, "p": self.p, "corpus": self._corpus_key}

    @property
    def input_mask(self) -> np.ndarray:
        return self.vocab_mask

    @property
    def output_mask(self) -> np.ndarray:
        return self.sensitive

    def use_table(self, table) -> None:
        super().use_table(table)
        self.dense = False  # draws go through the table, also where V_s is small

    def _probs(self, ids: np.ndarray) -> np.ndarray:
        """``Pr(y|x)`` over ``V_s`` for each ``x`` in ``ids`` (float64, rows sum to 1)."""
        d = self.space.exact_distances(ids, cols=self.v_s).astype(np.float64)
        d -= d.min(axis=1, keepdims=True)
        with np.errstate(over="ignore", invalid="ignore"):
            logit = np.where(d > 0, -0.5 * self.epsilon * d, 0.0)
        w = np.exp(logit)
        return w / w.sum(axis=1, keepdims=True)

    # ----- sampling --------------------------------------------------------------------------------
    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self._sample_branches(idx, rng)[0]

    def _sample_branches(self, idx: np.ndarray, rng: np.random.Generator, force: bool = False):
        out = idx.copy()
        sens = self.sensitive[idx]
        redraw = sens.copy()
        if self.p < 1.0 and not force:  # force (a detected span): no keep branch, every unit is redrawn
            redraw |= rng.random(len(idx)) < self.p
        else:
            redraw[:] = True
        pos = np.flatnonzero(redraw)
        if len(pos):
            out[pos] = self._draw(idx[pos], rng)
        reasons = np.where(sens, "sensitive", np.where(redraw, "non-sensitive-resampled", "non-sensitive-kept"))
        return out, (reasons.tolist(), sens)

    def _draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Exact draws from ``Pr(·|x)`` over ``V_s`` for each occurrence."""
        if self.dense:
            return self._draw_dense(x, rng)
        tab = self.table
        if self._bounds is None:
            self._bounds = block_bounds(tab.width)
        c = np.full(len(x), 0.5 * self.epsilon)
        if self._everything:
            return sample_ball(self.space, tab, x, c, rng, bounds=self._bounds,
                               exact=lambda pos, g: self._draw_dense(x[pos], g))
        uniq, inv = np.unique(x, return_inverse=True)
        ref = np.zeros(len(uniq))
        out_s = ~self.sensitive[uniq]
        if out_s.any():
            ref[out_s] = nearest_member_distance(tab, uniq[out_s], self.sensitive)
        return sample_ball(self.space, tab, x, c, rng, member=self.sensitive, pool=self.v_s, s_ref=ref[inv],
                           bounds=self._bounds, exact=lambda pos, g: self._draw_dense(x[pos], g))

    def _draw_dense(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Inverse-CDF draws from dense rows over ``V_s``, one row per distinct unit."""
        uniq, inv = np.unique(x, return_inverse=True)
        out = np.empty(len(x), dtype=np.int64)
        order = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[order], np.arange(len(uniq) + 1))
        u = rng.random(len(x))
        step = max(1, DENSE_CELLS // max(1, len(self.v_s)))
        for s in range(0, len(uniq), step):
            cdf = np.cumsum(self._probs(uniq[s : s + step]), axis=1)
            for r in range(cdf.shape[0]):  # one searchsorted per distinct unit
                sel = order[bounds[s + r] : bounds[s + r + 1]]
                j = np.searchsorted(cdf[r], u[sel] * cdf[r, -1], side="right")
                out[sel] = self.v_s[np.minimum(j, len(self.v_s) - 1)]
        return out

    def transition(self, x) -> np.ndarray:
        return self.transition_rows(np.asarray([self.index_of(x)]))[0]

    def dp_transition(self, x) -> np.ndarray:
        """The sensitive-word sampler's row ``exp(−ε·d(x, y)/2)/Σ`` over ``V_s`` for any ``x`` of ``V``
        (no keep mass): what a unit of a detected span is drawn from."""
        row = np.zeros(self.space.size, dtype=np.float64)
        row[self.v_s] = self._probs(np.asarray([self.index_of(x)]))[0]
        return row

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

    @property
    def has_keep_rule(self) -> bool:
        return super().has_keep_rule or self.p < 1.0  # the frequent units' keep branch
