"""Stencil and punctuated Stencil (docs/algorithms.md, Harel et al. section 3): context-aware token replacement.

For the unit ``t_k`` at position ``k`` of the prompt:

* window offsets ``o ∈ {-h..h}``, ``h = (n-1)/2``; Gaussian weights
  ``f_o ∝ exp(-o² / (2σ²))`` renormalised over the offsets whose position
  *exists*: inside the text and holding a unit of ``V`` (punctuation or OOV
  pieces outside ``V`` carry no embedding, so they do not exist here);
* ``v = Σ_o f_o · E[t_{k+o}]`` (raw embeddings);
* output ``argmax_{t ∈ V \\ {t_k}} cos(v, E[t])``.

Punctuated Stencil sets ``f_0 = 0`` (the unit itself does not contribute).
``σ = 0`` is the limit ``σ → 0``: all weight on the existing offsets closest
to ``k``. When no offset exists (punctuated Stencil on a one-unit prompt) ``v``
is undefined and the output is uniform over ``V \\ {t_k}``; otherwise the
mechanism is deterministic given the prompt. Defaults follow the paper:
``n = 9``, ``σ = 0.8`` (Stencil) and ``σ = 1.0`` (punctuated). No DP claim.

Search: ``exact=True`` (default) is the exact argmax (one GEMM over ``V``,
:mod:`dptext.mechanisms._fastnn`). ``exact=False`` is approximate: it scans
only the ``nprobe`` lists (of about 1,000) of the space's IVF index nearest to
``v`` (:mod:`dptext.spaces.ann`) and returns the best unit other than ``t_k``
among them, exact whenever the true winner lies in a probed list. Measured on
``smollm2`` (real text, ``benchmarks/bench_tokenmanip.py``): agreement with
exact search about 0.94 at ``nprobe = 64`` (default, about 2.5x less CPU),
0.97-0.98 at 128, 0.99 at 256, where it is no cheaper than exact search.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms._contextual import ContextualMechanism, substitute
from dptext.mechanisms._fastnn import NPROBE, ann_best_match, exact_best_match
from dptext.mechanisms.base import PrivacyClaim
from dptext.mechanisms.registry import register
from dptext.text import Segmentation

def window_weights(offsets: np.ndarray, exists: np.ndarray, sigma: float, punctuated: bool) -> np.ndarray:
    """``f`` for each row of ``exists`` [P, n] (rows with no existing offset are all zero)."""
    sq = (offsets.astype(np.float64) ** 2)[None, :]
    logw = -sq / (2.0 * sigma * sigma) if sigma > 0 else -sq * 1e30
    ok = exists.copy()
    if punctuated:
        ok[:, offsets == 0] = False
    logw = np.where(ok, logw, -np.inf)
    top = logw.max(axis=1, keepdims=True)
    w = np.where(ok, np.exp(logw - np.where(np.isfinite(top), top, 0.0)), 0.0)
    s = w.sum(axis=1, keepdims=True)
    return np.divide(w, s, out=np.zeros_like(w), where=s > 0)


class StencilBase(ContextualMechanism):
    default_space = "smollm2"
    contextual = True
    dp = False  # no differential-privacy claim
    params = {"n": 9, "sigma": None, "exact": True, "nprobe": NPROBE}
    punctuated: bool = False
    default_sigma: float = 0.8

    def __init__(self, *, epsilon: float | None = None, n: int = 9, sigma: float | None = None,
                 exact: bool = True, nprobe: int = NPROBE, **kwargs) -> None:
        super().__init__(epsilon=1.0 if epsilon is None else epsilon, **kwargs)
        self.epsilon = None  # no privacy parameter: a given --epsilon is ignored
        n = int(n)
        if n < 1 or n % 2 == 0:
            raise DPTextError(f"invalid window n={n}: must be an odd number >= 1")
        sigma = self.default_sigma if sigma is None else float(sigma)
        if not sigma >= 0 or sigma == float("inf"):
            raise DPTextError(f"invalid sigma {sigma!r}: must be a finite number >= 0")
        self.n, self.sigma = n, sigma
        self.offsets = np.arange(-(n // 2), n // 2 + 1)
        self.exact, self.nprobe = bool(exact), int(nprobe)
        if self.nprobe < 1:
            raise DPTextError(f"invalid nprobe={self.nprobe}: must be >= 1")
        if not self.exact:  # build or open the index now (progress lines while building)
            from dptext.spaces.ann import IvfIndex

            IvfIndex.of(self.space, "cosine", progress=kwargs.get("progress"))

    def settings(self) -> dict:
        out = {**super().settings(), "n": self.n, "sigma": self.sigma, "exact": self.exact}
        return out if self.exact else {**out, "nprobe": self.nprobe}

    def quasi_embeddings(self, seg: Segmentation, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``v`` for each position in ``pos`` [P, N] and whether it is defined [P]."""
        idx = self.space.lookup_many([p.text for p in seg.pieces])
        at = pos[:, None] + self.offsets[None, :]
        inside = (at >= 0) & (at < len(idx))
        units = np.where(inside, idx[np.clip(at, 0, len(idx) - 1)], -1)
        f = window_weights(self.offsets, units >= 0, self.sigma, self.punctuated)
        emb = self.space.embeddings
        v = np.zeros((len(pos), emb.shape[1]), dtype=np.float32)
        for j in range(len(self.offsets)):
            rows = np.flatnonzero(f[:, j] > 0)
            if len(rows):
                v[rows] += (f[rows, j][:, None] * emb[units[rows, j]]).astype(np.float32)
        return v, f.sum(axis=1) > 0

    def _sample_in_context(self, seg, pos, idx, rng) -> np.ndarray:
        upos, inv = np.unique(pos, return_inverse=True)
        uidx = np.empty(len(upos), dtype=np.int64)
        uidx[inv] = idx
        v, defined = self.quasi_embeddings(seg, upos)
        out = self.best_cosine(v, uidx)[inv]
        undefined = ~defined[inv]
        if undefined.any():  # uniform over V \ {x}
            r = rng.integers(0, self.space.size - 1, size=int(undefined.sum()))
            out[undefined] = r + (r >= idx[undefined])
        return out

    def _row_in_context(self, seg, pos, i) -> np.ndarray:
        v, defined = self.quasi_embeddings(seg, np.asarray([pos]))
        n = self.space.size
        if not defined[0]:
            row = np.full(n, 1.0 / (n - 1))
            row[i] = 0.0
            return row
        row = np.zeros(n, dtype=np.float64)
        row[self.best_cosine(v, np.asarray([i]))[0]] = 1.0
        return row

    def column_in_context(self, seg, i: int, cand: np.ndarray, y: int, *, chunk: int = 256) -> np.ndarray:
        """Exact column ``1[NN(v with x at i) = y]`` per candidate ``x`` (linear in ``φ(x)``; attacks' view)."""
        return stencil_column(self, seg, i, cand, y, chunk)

    def best_cosine(self, v: np.ndarray, exclude: np.ndarray) -> np.ndarray:
        """``argmax_{t != exclude} cos(v, E[t])``: exact, or the best of the probed IVF lists (``exact=False``)."""
        if not self.exact:
            return ann_best_match(v, self.space, "cosine", exclude=exclude, nprobe=self.nprobe)
        return exact_best_match(v, self.space, "cosine", exclude=exclude)

    def privacy(self) -> PrivacyClaim:
        return PrivacyClaim(
            mechanism=self.name, epsilon=None, kind="none", bound=None,
            scope="no DP claim: deterministic given the prompt (a context-weighted nearest neighbour)",
            details={"n": self.n, "sigma": self.sigma, "punctuated": self.punctuated},
        )


@register("stencil")
class Stencil(StencilBase):
    """Stencil(n, σ): Gaussian-weighted window embedding, nearest other unit by cosine (no DP claim)."""

    punctuated = False
    default_sigma = 0.8


@register("punctuated-stencil")
class PunctuatedStencil(StencilBase):
    """Punctuated Stencil: Stencil without the unit's own embedding (f_k = 0) (no DP claim)."""

    punctuated = True
    default_sigma = 1.0


def stencil_column(mech, seg, i: int, cand: np.ndarray, y: int, chunk: int = 256) -> np.ndarray:
    """Stencil's exact column: ``1[NN(v(c) + f_i·(φ(x) − φ(c_i))) = y]`` per candidate ``x``.

    ``v`` is linear in the centre unit, so one probe substitution gives ``f_i``; then one batched
    nearest-neighbour search per chunk of candidates (the attacks' in-context columns use it).
    """
    cand = np.asarray(cand, dtype=np.int64)
    space = mech.space
    v0, defined = mech.quasi_embeddings(seg, np.asarray([i], dtype=np.int64))
    if not defined[0]:  # no weight anywhere: uniform over V \ {x}
        return np.where(cand == y, 0.0, 1.0 / (space.size - 1))
    x0 = space.lookup(seg.pieces[i].text)
    # the centre weight f_i, from linearity: substitute a probe unit and compare
    probe = int(cand[0]) if int(cand[0]) != x0 else int(cand[-1])
    v1, _ = mech.quasi_embeddings(substitute(seg, i, space.units[probe]), np.asarray([i], dtype=np.int64))
    diff = space.embeddings[probe].astype(np.float64) - space.embeddings[x0]
    f_i = float(np.dot(v1[0] - v0[0], diff) / max(np.dot(diff, diff), 1e-30)) if probe != x0 else 0.0
    out = np.empty(len(cand), dtype=np.float64)
    emb = space.embeddings
    for s in range(0, len(cand), chunk):
        c = cand[s : s + chunk]
        v = v0 + np.float32(f_i) * (emb[c].astype(np.float32) - emb[x0].astype(np.float32))
        out[s : s + len(c)] = mech.best_cosine(v.astype(np.float32), c) == y
    return out
