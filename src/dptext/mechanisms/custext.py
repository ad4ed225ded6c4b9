"""CUSTEXT and CUSTEXT+ (Chen et al. 2023; docs/algorithms.md).

Candidate lists of size ``K`` (default 20):

* conservative (default): walk ``V`` from the most frequent unit; an
  unassigned unit seeds a cluster of its top-``K`` nearest *unassigned* units
  (itself included); every member gets that list and leaves the pool, so
  lists are disjoint (only the last one may be shorter than ``K``);
* aggressive: every unit gets its own top-``K`` list.

Similarity ``s`` is cosine on L2-normalised embeddings (``similarity="cosine"``)
or ``−d`` (``"euclidean"``), min-max scaled over the list:
``ŝ = (s − min s)/(max s − min s)``; ``Pr(y | x) ∝ exp(ε·ŝ(x, y)/2)`` over
``x``'s list. CUSTEXT+ keeps stopwords unchanged.

The lists and per-unit similarities are built once per space (and corpus)
and cached on disk; sampling is a vectorised inverse CDF over ``K`` columns.
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.mechanisms._vocab import corpus_key, distinct, vocabulary
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register
from dptext.resources import is_stopword

STRATEGIES = ("conservative", "aggressive")
SIMILARITIES = ("cosine", "euclidean")
LISTS_VERSION = 1  # bump when build_lists or the list similarities change (cache entries)


def _scores(space, rows, cols, similarity):
    if similarity == "cosine":
        return space.cosine(rows, cols)
    return -space.distances(rows, cols)


def build_lists(space, mask, freq, k, strategy, similarity, progress=None) -> np.ndarray:
    """``[|space|, k]`` candidate lists (vocabulary indices, ``-1`` padded; ``-1`` rows outside V)."""
    members = np.flatnonzero(mask)
    lists = np.full((space.size, k), -1, dtype=np.int64)
    task = progress.add_task(f"CUSTEXT {strategy} lists", total=len(members)) if progress else None
    if strategy == "aggressive":
        for start in range(0, len(members), 1024):
            rows = members[start : start + 1024]
            s = _scores(space, rows, members, similarity)
            kk = min(k, len(members))
            top = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            top = np.take_along_axis(top, np.argsort(-np.take_along_axis(s, top, 1), axis=1, kind="stable"), 1)
            lists[rows, :kk] = members[top]
            if task is not None:
                progress.advance(task, len(rows))
        return lists
    free = mask.copy()
    for seed in members[np.lexsort((members, -freq[members]))]:  # most frequent first
        if not free[seed]:
            continue
        pool = np.flatnonzero(free)
        s = _scores(space, [seed], pool, similarity)[0]
        s[pool == seed] = np.inf  # the seed is always in its own cluster
        kk = min(k, len(pool))
        top = np.argpartition(-s, kk - 1)[:kk]
        cluster = pool[top[np.argsort(-s[top], kind="stable")]]
        lists[cluster, :kk] = cluster
        free[cluster] = False
        if task is not None:
            progress.advance(task, kk)
    return lists


@register("custext")
class CusText(Mechanism):
    """CUSTEXT: exponential mechanism over a K = 20 candidate list (ε within a list)."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"k": 20, "strategy": "conservative", "similarity": "cosine", "corpus": None}

    def __init__(self, *, epsilon: float, k: int = 20, strategy: str = "conservative", similarity: str = "cosine",
                 corpus=None, **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        if strategy not in STRATEGIES:
            raise DPTextError(f"unknown CUSTEXT strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if similarity not in SIMILARITIES:
            raise DPTextError(f"unknown similarity {similarity!r}; choose one of {', '.join(SIMILARITIES)}")
        if int(k) < 1:
            raise DPTextError(f"invalid list size k={k}: must be >= 1")
        self.k, self.strategy, self.similarity = int(k), strategy, similarity
        self._corpus_key = corpus_key(corpus)
        self.vocab_mask, self.freqs = vocabulary(self.space, corpus)
        self.lists, self.sims = self._load_lists(kwargs.get("progress"))
        # CDF rows of the units met so far, packed in order of first use (a |V|-row table would be
        # written at scattered rows: one fresh memory page per unit on a cold start)
        self._slot = np.full(self.space.size, -1, dtype=np.int32)
        self._cdf = np.empty((0, self.lists.shape[1]), dtype=np.float64)

    def settings(self) -> dict:
        return {**super().settings(), "k": self.k, "strategy": self.strategy, "similarity": self.similarity,
                "corpus": self._corpus_key}

    def _load_lists(self, progress) -> tuple[np.ndarray, np.ndarray]:
        """Lists and their similarities (ε-independent), cached as ``.npy`` and memory-mapped."""
        key = cache.key_of(self.space.cache_key, self.k, self.strategy, self.similarity, self._corpus_key)
        path = cache.entry_path("custext", self.space.name, key, ".npy", version=LISTS_VERSION)
        spath = cache.entry_path("custext", self.space.name + "-sims", key, ".npy", version=LISTS_VERSION)
        if not path.exists():
            lists = build_lists(self.space, self.vocab_mask, self.freqs, self.k, self.strategy, self.similarity,
                                progress)
            cache.save_npy(path, lists.astype(np.int32))
        if not spath.exists():
            self.lists = cache.load_npy(path)
            cache.save_npy(spath, self._list_similarities())
        return cache.load_npy(path), cache.load_npy(spath)

    def _list_similarities(self) -> np.ndarray:
        """``s(x, list_x[j])`` for every unit (NaN on padding), vectorised in chunks."""
        out = np.full(self.lists.shape, np.nan)
        valid = self.lists >= 0
        emb = self.space.normalized if self.similarity == "cosine" else self.space.embeddings
        for start in range(0, self.space.size, 4096):
            sl = slice(start, start + 4096)
            lst = np.where(valid[sl], self.lists[sl], 0)
            x = emb[start : start + lst.shape[0]]
            if self.similarity == "cosine":
                s = np.einsum("id,ikd->ik", x, emb[lst])
            else:
                s = -np.linalg.norm(emb[lst] - x[:, None, :], axis=2)
            out[sl] = np.where(valid[sl], s, np.nan)
        return out

    @property
    def probs(self) -> np.ndarray:
        """``Pr(list_x[j] | x)`` for every unit (``[|V|, K]``)."""
        return self._list_probs(np.arange(self.space.size))

    def _list_probs(self, ids: np.ndarray) -> np.ndarray:
        s = self.sims[ids].astype(np.float64)  # NaN on padding; rows of units outside V are all padding
        lo = np.fmin.reduce(s, axis=1, keepdims=True)  # fmin/fmax skip NaN (an all-padding row gives NaN)
        spread = np.fmax.reduce(s, axis=1, keepdims=True) - lo
        ok = spread > 0  # False for NaN and for a degenerate (uniform) list
        s_hat = np.where(ok, (s - lo) / np.where(ok, spread, 1.0), 0.0)
        logit = 0.5 * self.epsilon * s_hat
        w = np.exp(logit - 0.5 * self.epsilon)  # ŝ ≤ 1: exponents ≤ 0
        w[np.isnan(s)] = 0.0
        tot = w.sum(axis=1, keepdims=True)
        return np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)

    @property
    def input_mask(self) -> np.ndarray:
        return self.vocab_mask

    @property
    def output_mask(self) -> np.ndarray:
        return self.vocab_mask

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        missing = idx[self._slot[idx] < 0]
        if len(missing):
            missing = distinct(missing)
            self._slot[missing] = np.arange(len(self._cdf), len(self._cdf) + len(missing))
            self._cdf = np.concatenate([self._cdf, np.cumsum(self._list_probs(missing), axis=1)])
        cdf = self._cdf[self._slot[idx]]
        u = rng.random(len(idx))
        j = (cdf < u[:, None]).sum(axis=1)
        lists = self.lists[idx]
        j = np.minimum(j, (lists >= 0).sum(axis=1) - 1)  # never past the last entry of a short list
        return lists[np.arange(len(idx)), j].astype(np.int64)

    def transition(self, x) -> np.ndarray:
        return self.transition_rows(np.asarray([self.index_of(x)]))[0]

    def transition_rows(self, ids) -> np.ndarray:
        """Rows ``Pr(·|x)`` for many input indices at once, ``[len(ids), |V|]``."""
        ids = np.asarray(ids, dtype=np.int64)
        rows = np.zeros((len(ids), self.space.size), dtype=np.float64)
        lst = self.lists[ids]
        r, c = np.nonzero(lst >= 0)
        rows[r, lst[r, c]] = self._list_probs(ids)[r, c]
        return rows

    def privacy(self) -> PrivacyClaim:
        scope = ("ε-DP between inputs that share a candidate list (exponential mechanism over min-max scaled "
                 "similarity, sensitivity 1); unbounded across lists")
        if self.strategy == "aggressive":
            scope = ("ε-DP between inputs whose (own) candidate lists contain the output; lists overlap, "
                     "unbounded otherwise")
        # bound: the worst case over ANY pair of inputs, which is unbounded (lists differ); ε is the in-scope value
        return PrivacyClaim(mechanism=self.name, epsilon=self.epsilon, kind="dp-within-set", bound=float("inf"),
                            scope=scope, details={"k": self.k, "strategy": self.strategy, "within_list": self.epsilon})


@register("custext+")
class CusTextPlus(CusText):
    """CUSTEXT+: CUSTEXT that keeps stopwords unchanged."""

    def pass_through(self, unit: str) -> str | None:
        return "stopword" if is_stopword(unit) else None
