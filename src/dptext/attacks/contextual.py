"""Contextual Bayesian attack and the contextual K-ASR bound (docs/algorithms.md; paper 003 Thm 2, Eqs. 11-12, Def. 2).

For an observed unit ``y`` with sanitized context ``c``::

    X' = top-K_x  Pr(y | x) · (P̂(x) + 1/α)                 (context-free pool)
    x̂  = argmax_{x ∈ X'}  Pr(y | x) · (P̂(x) + 1/α) · h(f(c, x), f(c, y))

``h`` (``_detector.Detector``) approximates ``Pr(c | x, y)/Pr(c | y)`` by a
sentence-pair classifier trained on shadow sanitizations: for every
sanitized shadow unit, the pair built with the context-free top-1 guess gets
label 1 when it is the true original, else 0; to balance labels, a label-1
sample adds a label-0 sample with the second most likely guess, and a label-0
sample adds a label-1 sample with the true original (paper 003, App. F).
The *contextual K bound* is the same rule with the unit frequencies ``P(x)``
of the whole private corpus in place of ``P̂(x) + 1/α`` (paper 003, Def. 2).

Trained detectors are cached on disk (safetensors) keyed by the mechanism,
the shadow corpus and the training options.
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.attacks._detector import Detector, detector_path
from dptext.attacks.base import Observed, observe, register_attack
from dptext.attacks.bayes import BayesAttack, _PrivatePrior
from dptext.text import match_case


def _swap(obs: Observed, s: int, p: int, unit: str) -> str:
    return obs.text(s, {p: match_case(obs.outputs[s][p], unit)})


@register_attack("contextual")
class ContextualBayes(BayesAttack):
    def __init__(self, mechanism, *, k: int = 5, pool: int = 10, repeats: int = 10, max_pairs: int = 10_000,
                 epochs: int | None = None, batch_size: int = 32, detector: str = "frozen",
                 candidates: str = "domain", budget_mb: float = 512, rows: str | None = None,
                 progress=None) -> None:
        super().__init__(mechanism, k=k, candidates=candidates, budget_mb=budget_mb, rows=rows, progress=progress)
        if detector not in ("frozen", "finetune"):
            from dptext.errors import DPTextError

            raise DPTextError(f"unknown detector {detector!r}; choose frozen or finetune")
        self.pool = max(int(pool), self.k)
        self.repeats, self.max_pairs = int(repeats), int(max_pairs)
        self.detector_mode = detector
        self.epochs = int(epochs if epochs is not None else (30 if detector == "frozen" else 1))
        self.batch_size = int(batch_size)
        self.detector: Detector | None = None
        self.detector_cached = False
        self.n_pairs = 0

    def _fit(self, shadow, rng) -> None:
        BayesAttack._fit(self, shadow, rng)
        key = cache.key_of("detector", 1, self.mechanism.settings(), self.space.cache_key, cache.key_of(shadow),
                           self.repeats, self.max_pairs, self.epochs, self.batch_size, self.candidates_mode,
                           self.detector_mode)
        path = detector_path(key)
        self.detector = Detector(self.detector_mode)
        if path.exists():
            self.detector.load(path)
            self.detector_cached = True
            return
        a, b, labels = self.training_pairs(shadow, rng)
        self.n_pairs = len(labels)
        self.detector.train(a, b, labels, epochs=self.epochs, batch_size=self.batch_size,
                            seed=int(rng.integers(2**31)), progress=self.progress)
        self.detector.save(path)

    def training_pairs(self, shadow, rng) -> tuple[list[str], list[str], np.ndarray]:
        """Label-balanced pairs from shadow sanitizations (paper 003, App. F)."""
        obs = observe(self.mechanism, shadow, rng=rng, repeats=self.repeats)
        ids = self.space.lookup_many(obs.observed)
        truth = self.space.lookup_many(obs.truth)
        top, _ = self.top(ids, self.prior, 2, obs)
        usable = np.flatnonzero((top[:, 0] >= 0) & (truth >= 0))
        usable = rng.permutation(usable)[: max(1, self.max_pairs // 2)]
        a, b, labels = [], [], []
        units = self.space.units
        for t in usable.tolist():
            s, p = int(obs.sent[t]), int(obs.pos[t])
            first, second, x = int(top[t, 0]), int(top[t, 1]), int(truth[t])
            if first == x:
                other = second if second >= 0 else int(self.cand[rng.integers(len(self.cand))])
                if other == x:
                    continue
                pairs = ((first, 1), (other, 0))
            else:
                pairs = ((first, 0), (x, 1))
            sanitized = obs.text(s)
            for unit, lab in pairs:
                a.append(_swap(obs, s, p, units[unit]))
                b.append(sanitized)
                labels.append(lab)
        return a, b, np.asarray(labels, dtype=np.int64)

    def scored_pool(self, obs: Observed, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pool candidates ``[n, pool]`` (-1 = none) and their contextual scores (Bayes score × h)."""
        ids = self.space.lookup_many(obs.observed)
        idx, sc = self.top(ids, prior, self.pool, obs)
        rows, cols = np.nonzero(idx >= 0)
        a, b = [], []
        units = self.space.units
        for t, j in zip(rows.tolist(), cols.tolist()):
            s, p = int(obs.sent[t]), int(obs.pos[t])
            a.append(_swap(obs, s, p, units[idx[t, j]]))
            b.append(obs.text(s))
        h = self.detector.predict(a, b, progress=self.progress) if a else np.zeros(0)
        final = np.zeros_like(sc)
        final[rows, cols] = sc[rows, cols] * h
        return idx, final

    def rank(self, obs: Observed):
        idx, final = self.scored_pool(obs, self._prior(obs))
        order = np.argsort(-final, axis=1, kind="stable")[:, : self.k]
        idx = np.take_along_axis(idx, order, axis=1)
        final = np.take_along_axis(final, order, axis=1)
        out: list = []
        for row_i, row_s in zip(idx.tolist(), final.tolist()):
            cands = [self.space.units[i] for i, v in zip(row_i, row_s) if i >= 0 and v > 0]
            out.append(cands or None)
        return out

    def details(self, obs, ranking) -> dict:
        return {**super().details(obs, ranking), "pool": self.pool, "detector": self.detector_mode, "detector_pairs": self.n_pairs, "detector_cached": self.detector_cached,
                "detector_train_seconds": round(self.detector.train_seconds, 3)}


@register_attack("contextual-bound")
class ContextualBound(_PrivatePrior, ContextualBayes):
    """Contextual K-ASR bound: the contextual rule with the private frequencies (paper 003, Def. 2)."""

    is_bound = True
    needs_private = True

    def _fit(self, shadow, rng) -> None:
        ContextualBayes._fit(self, shadow, rng)  # the detector is the adversary's (trained on shadow data)
        self._set_candidates(self._private_candidates())
        self.prior = self._private_prior("sampled")
