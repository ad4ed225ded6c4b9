"""Context-free Bayesian attack and the context-free ASR bound (docs/algorithms.md; paper 003, Thm 1, Eq. 10).

Attack (adversary with a shadow corpus of ``α`` units and unit frequencies
``P̂``)::

    x̂(y) = argmax_{x ∈ X} Pr(y | x) · (P̂(x) + 1/α)

``Pr(y)`` is common to all ``x`` and dropped. ``1/α`` keeps the ranking
informative (``argmax Pr(y|x)``) when every plausible ``x`` is unseen in the
shadow corpus. The *bound* (Definition 1) is the same rule with the unit
frequencies ``P(x)`` of the whole private corpus (every unit of every private
sentence, not only the attacked ones) and no ``1/α``: the Bayes-optimal
context-free attack, which no context-free attack beats in expectation. Units
absent from the private corpus have ``P(x) = 0`` and can never be the argmax, so
the bound's candidates are the private corpus's units (exactly the same ranking,
and cheap even for SANTEXT+'s 50,000-unit domain).

``X`` is the mechanism's input domain (``candidates="domain"``) or, for huge
domains with expensive rows, the domain units seen in the shadow corpus
(``candidates="shadow"``; unseen originals then cannot be recovered). ``Pr(y|x)`` comes from the
mechanism's ``transition`` (``_likelihood.Likelihood``), once per candidate
row (table mode) or once per distinct observed unit (stream mode). For a
contextual mechanism (Cape, Stencil) ``rows="context"`` (the default) computes
``Pr(y | x, c)`` in each target's private sentence (``_incontext``, one column
per target: slow); ``rows="lone"`` uses the one-unit-prompt row instead (a
context-free stand-in, reported as such).
"""

from __future__ import annotations

import numpy as np

from dptext.attacks._incontext import is_contextual, observed_columns
from dptext.attacks._likelihood import Likelihood
from dptext.attacks.base import Attack, Observed, register_attack
from dptext.errors import DPTextError


def unit_counts(space, texts) -> tuple[np.ndarray, int]:
    """(counts over the space's vocabulary, total number of units incl. OOV) of ``texts``."""
    counts = np.zeros(space.size, dtype=np.float64)
    total = 0
    for text in texts:
        idx = space.lookup_many([p.text for p in space.segment(text).pieces])
        total += len(idx)
        idx = idx[idx >= 0]
        np.add.at(counts, idx, 1.0)
    return counts, total


def top_k(sc: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of the ``k`` largest entries of each row, best first.

    Small ``k``: ``k`` passes of ``argmax`` (much faster than ``argpartition`` on wide rows);
    ties go to the lower index. ``sc`` is overwritten.
    """
    m = sc.shape[0]
    if k > 32:
        part = np.argpartition(-sc, k - 1, axis=1)[:, :k]
        val = np.take_along_axis(sc, part, axis=1)
        order = np.argsort(-val, axis=1, kind="stable")
        return np.take_along_axis(part, order, axis=1), np.take_along_axis(val, order, axis=1)
    rows = np.arange(m)
    idx = np.empty((m, k), dtype=np.int64)
    val = np.empty((m, k), dtype=sc.dtype)
    for j in range(k):
        a = sc.argmax(axis=1)
        idx[:, j] = a
        val[:, j] = sc[rows, a]
        sc[rows, a] = -np.inf
    return idx, val


class _BayesBase(Attack):
    """Shared ranking machinery: ``score(x, y) = Pr(y|x) · prior(x)`` over candidates."""

    def __init__(self, mechanism, *, k: int = 5, candidates: str = "domain", budget_mb: float = 512,
                 rows: str | None = None, progress=None) -> None:
        super().__init__(mechanism, k=k, progress=progress)
        if candidates not in ("domain", "shadow"):
            raise DPTextError(f"unknown candidates {candidates!r}; choose domain or shadow")
        contextual = is_contextual(mechanism)
        if rows not in (None, "context", "lone"):
            raise DPTextError(f"unknown rows {rows!r}; choose context or lone")
        # "context-free": the mechanism's rows do not depend on the prompt
        self.rows = "context-free" if not contextual else (rows or "context")
        self.candidates_mode = candidates
        self.budget_mb = budget_mb
        self.domain = np.flatnonzero(mechanism.input_mask)
        self.prior: np.ndarray | None = None  # over the space
        self.lik: Likelihood | None = None

    def _set_candidates(self, cand: np.ndarray) -> None:
        self.cand = np.asarray(cand, dtype=np.int64)
        self.lik = Likelihood(self.mechanism, self.cand, budget_mb=self.budget_mb, progress=self.progress)
        if self.rows != "context":
            self.lik.build()

    def top(self, ids: np.ndarray, prior: np.ndarray, k: int, obs: Observed | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` candidates (space indices, -1 = none) and scores for each observed index.

        Scores are ``Pr(y|x)·prior(x)/max prior`` (zero-score candidates are reported as -1).
        With ``rows="context"``, ``obs`` (whose targets ``ids`` are) supplies each target's sentence.
        """
        ids = np.asarray(ids, dtype=np.int64)
        out_i = np.full((len(ids), k), -1, dtype=np.int64)
        out_s = np.zeros((len(ids), k), dtype=np.float64)
        ok = np.flatnonzero(ids >= 0)
        if not len(ok):
            return out_i, out_s
        if self.rows == "context":
            if obs is None or obs.sources is None:
                raise DPTextError(f"{self.name}: rows in context need the private sentences of the targets")
            import time

            uniq, inv = ok, np.arange(len(ok))
            t0 = time.perf_counter()
            cols = observed_columns(self.mechanism, obs, self.cand, ids, progress=self.progress)[ok]
            self.context_seconds = getattr(self, "context_seconds", 0.0) + time.perf_counter() - t0
        else:
            uniq, inv = np.unique(ids[ok], return_inverse=True)
            cols = self.lik.columns(uniq)
        sc = cols * self.prior_c(prior)[None, :]  # [m, |X|]
        kk = min(k, len(self.cand))
        part, psc = top_k(sc, kk)
        idx = np.where(psc > 0, self.cand[part], -1)
        out_i[ok, :kk] = idx[inv]
        out_s[ok, :kk] = psc[inv]
        return out_i, out_s

    def _prior(self, obs: Observed) -> np.ndarray:
        return self.prior

    def details(self, obs: Observed, ranking) -> dict:
        out = {"rows": self.rows, "candidates": int(len(self.cand))}
        if self.rows == "context":  # the cost of exact rows in context, per attacked unit
            out["context_seconds_per_unit"] = round(getattr(self, "context_seconds", 0.0) / max(obs.n_targets, 1), 4)
        return out

    def prior_c(self, prior: np.ndarray) -> np.ndarray:
        """The prior over the candidates, scaled to max 1 (ranking-invariant), as float32.

        Scores are computed in float32 (several times faster than float64 on wide rows);
        scaling the prior keeps the best scores far from float32 underflow.
        """
        pc = np.asarray(prior, dtype=np.float64)[self.cand]
        top = pc.max() if len(pc) else 0.0
        return (pc / top if top > 0 else pc).astype(np.float32)

    def rank(self, obs: Observed):
        ids = self.space.lookup_many(obs.observed)
        idx, _ = self.top(ids, self._prior(obs), self.k, obs)
        words = self.unit_array[np.maximum(idx, 0)]
        out: list = []
        for row_i, row_w in zip(idx.tolist(), words.tolist()):
            cands = [w for i, w in zip(row_i, row_w) if i >= 0]
            out.append(cands or None)
        return out


@register_attack("bayes")
class BayesAttack(_BayesBase):
    """Context-free Bayesian attack with a shadow-corpus prior (paper 003 Eq. 10).

    ``P̂(x)`` counts the shadow corpus's units that the mechanism would sample (the
    same rule as the targets: a unit the mechanism never samples, such as CUSTEXT+'s
    stopwords or SANTEXT+'s non-sensitive units, is never the original of a target);
    ``α`` is the number of such units and every candidate also gets ``1/α``.
    """

    needs_shadow = True

    def _fit(self, shadow, rng) -> None:
        self.shadow = shadow
        counts = target_counts(self.mechanism, shadow, "sampled", progress=self.progress)
        alpha = counts.sum()
        if alpha == 0:
            raise DPTextError("the mechanism samples no unit of the shadow corpus")
        self.alpha = alpha
        self.shadow_counts = counts
        self.prior = counts / alpha + 1.0 / alpha
        cand = self.domain
        if self.candidates_mode == "shadow":
            cand = self.domain[counts[self.domain] > 0]
            if not len(cand):
                raise DPTextError("no unit of the shadow corpus is in the mechanism's input domain")
        self._set_candidates(cand)

    def _prior(self, obs: Observed) -> np.ndarray:
        if obs.targets == "sampled":
            return self.prior
        counts = target_counts(self.mechanism, self.shadow, obs.targets)
        return counts / max(counts.sum(), 1.0) + 1.0 / max(counts.sum(), 1.0)


def target_counts(mechanism, texts, targets: str = "sampled", progress=None) -> np.ndarray:
    """How often each unit of the space is an attack target (:func:`~dptext.attacks.base.is_target`) in
    ``texts``, read off one perturbation (the policies are deterministic per unit; contextual
    mechanisms: their perturbable positions, without a device pass)."""
    from dptext.attacks.base import is_target
    from dptext.mechanisms._contextual import ContextualMechanism
    from dptext.mechanisms.base import Mechanism

    space = mechanism.space
    rng = np.random.default_rng(0)
    names: list[str] = []
    # a contextual mechanism's perturbable positions are defined by its class (no device pass needed)
    positions = mechanism.vocab_positions if isinstance(mechanism, ContextualMechanism) else None
    texts = list(texts)
    task = progress.add_task(f"finding the units {mechanism.name} samples in {len(texts):,} sentences",
                             total=len(texts)) if progress is not None else None
    for n, text in enumerate(texts, 1):
        if positions is not None and targets == "sampled":
            seg = Mechanism.segment(mechanism, text)  # the base segmentation: no prompt state is set
            names.extend(seg.pieces[i].text for i in positions(seg)[0].tolist())
        else:
            names.extend(u.original for u in mechanism.perturb(text, rng=rng).units if is_target(u, targets))
        if task is not None and (n % 200 == 0 or n == len(texts)):
            progress.update(task, completed=n)
    counts = np.zeros(space.size, dtype=np.float64)
    idx = space.lookup_many(names) if names else np.zeros(0, dtype=np.int64)
    np.add.at(counts, idx[idx >= 0], 1.0)
    return counts


def private_prior(mechanism, private, targets: str = "sampled") -> np.ndarray:
    """``P(x)``: frequencies, over the whole private corpus, of the units an attack targets (Def. 1).

    Paper 003 takes ``Pr(x)`` as the probability of ``x`` among the original tokens
    that DP sanitizes; units the mechanism never samples (CUSTEXT+'s stopwords,
    SANTEXT+'s non-sensitive units) are never targets and get no prior mass. Which
    units those are is read off one perturbation of the private corpus (the
    policies are deterministic per unit); every private sentence counts, not only
    the sanitized sentences under attack.
    """
    if not private:
        raise DPTextError("a bound needs the private corpus: its unit frequencies are the prior")
    counts = target_counts(mechanism, private, targets)
    return counts / max(counts.sum(), 1.0)


class _PrivatePrior:
    """Mixin for bounds: the prior is :func:`private_prior` for the targets of the scored observation."""

    def _private_prior(self, targets: str) -> np.ndarray:
        cache = self.__dict__.setdefault("_priors", {})
        if targets not in cache:
            cache[targets] = private_prior(self.mechanism, self.private, targets)
        return cache[targets]

    def _prior(self, obs: Observed) -> np.ndarray:
        return self._private_prior(obs.targets)

    def _private_candidates(self) -> np.ndarray:
        """Domain units present in the private corpus (the others have zero prior, never the argmax)."""
        counts, _ = unit_counts(self.space, self.private)
        cand = self.domain[counts[self.domain] > 0]
        if not len(cand):
            raise DPTextError("no unit of the private corpus is in the mechanism's input domain")
        return cand


@register_attack("bayes-bound")
class BayesBound(_PrivatePrior, _BayesBase):
    """Context-free ASR bound: the Bayes rule with the private corpus's unit frequencies (Def. 1)."""

    is_bound = True
    needs_private = True

    def _fit(self, shadow, rng) -> None:
        self._set_candidates(self._private_candidates())
        self.prior = self._private_prior("sampled")
