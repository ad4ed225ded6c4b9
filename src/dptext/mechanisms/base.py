"""Mechanism base class (docs/algorithms.md).

A mechanism maps one input unit ``x`` to one output unit ``y`` of the space's
vocabulary, independently per unit. Subclasses supply three things, kept
apart as in OpenDP (the claim is not the sampler):

* ``_sample(idx, rng)``: vectorised sampling of outputs for an array of input
  vocabulary indices;
* ``transition(x)``: the exact (or numerically integrated) row ``Pr(y | x)``
  over the space's vocabulary;
* ``privacy()``: the guarantee claimed (docs/algorithms.md).

Everything around the sampler lives here once: segmentation, punctuation
pass-through, the digits and out-of-vocabulary policies, whitespace and case
preservation, and the per-unit record of what happened (its types, the claim
and the outcome rules are in :mod:`dptext.mechanisms._result`, re-exported here).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.random  # noqa: F401  (every mechanism draws from a Generator: load it with the module, not lazily)

from dptext.errors import DPTextError, ParameterError, check_epsilon
# the result and claim types live in _result; re-exported: dptext.mechanisms.base is their public home
from dptext.mechanisms._result import (_ACTIONS, _DIGITS, _DROP, _KEEP, _RANDOM, _SAMPLE, OUTCOMES,  # noqa: F401
                                       RULE_KEPT, PerturbResult, PrivacyClaim, UnitRecord, _outcome, _outcomes)
from dptext.mechanisms._vocab import distinct
from dptext.resources import is_digits, is_punctuation
from dptext.spaces import EmbeddingSpace, get_space
from dptext.text import Piece, Segmentation, match_case

OOV_POLICIES = ("drop", "random", "keep")
DIGITS_POLICIES = ("random", "keep", "vocab")
PUNCT_POLICIES = ("keep", "perturb")
MAX_UNITS = 2_000_000  # per call; larger inputs should be streamed (sanitize-corpus)


class Mechanism(ABC):
    """Base of every per-unit text mechanism. Parameters are keyword-only."""

    name: ClassVar[str] = ""
    default_space: ClassVar[str] = "glove-50d"
    #: rows depend on the unit's context (the prompt), not on the unit alone
    contextual: ClassVar[bool] = False
    #: the mechanism states a differential-privacy claim
    dp: ClassVar[bool] = True
    #: the mechanism replaces units one at a time (False: it rewrites whole documents, e.g. DP-Prompt,
    #: so it has no per-unit row, audit or inspection)
    per_unit: ClassVar[bool] = True
    #: mechanism-specific keyword options and their defaults (validated by the mechanism spec)
    params: ClassVar[dict] = {}

    def __init__(self, *, epsilon: float, space: str | EmbeddingSpace | None = None, seed: int | None = None,
                 oov: str = "drop", digits: str = "random", punctuation: str = "keep", progress=None) -> None:
        self.epsilon = check_epsilon(epsilon)
        if oov not in OOV_POLICIES:
            raise DPTextError(f"unknown OOV policy {oov!r}; choose one of {', '.join(OOV_POLICIES)}")
        if digits not in DIGITS_POLICIES:
            raise DPTextError(f"unknown digits policy {digits!r}; choose one of {', '.join(DIGITS_POLICIES)}")
        if punctuation not in PUNCT_POLICIES:
            raise DPTextError(f"unknown punctuation policy {punctuation!r}; choose one of {', '.join(PUNCT_POLICIES)}")
        self.space = get_space(space or self.default_space, progress=progress)
        self.seed = seed
        self.rng = np.random.default_rng(seed)  # seed=None: OS entropy
        self.oov, self.digits, self.punctuation = oov, digits, punctuation

    # ----- the mechanism proper -----------------------------------------------------------------
    @abstractmethod
    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Output vocabulary indices for input vocabulary indices ``idx`` (vectorised)."""

    def _sample_branches(self, idx: np.ndarray, rng: np.random.Generator, force: bool = False):
        """``(outputs, branches)``: ``branches`` is None, or per occurrence the reason string of the
        sampler branch taken and whether the unit is sensitive (a ``(reasons, sensitive)`` pair).
        ``force``: every unit takes the DP branch (a mechanism with a keep branch must not keep)."""
        return self._sample(idx, rng), None

    @abstractmethod
    def transition(self, x) -> np.ndarray:
        """``Pr(y | x)`` for every ``y`` in the space's vocabulary (float64, sums to 1)."""

    def top(self, x, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most likely outputs of ``x`` as ``(unit, Pr(y | x))`` pairs, most likely first."""
        if int(k) < 1:
            raise ParameterError("k", f"invalid k {k!r}: must be >= 1")
        row = np.asarray(self.transition(x), dtype=np.float64)
        k = min(int(k), row.size)
        best = np.argpartition(-row, k - 1)[:k]
        best = best[np.argsort(-row[best], kind="stable")]
        return [(self.space.units[i], float(row[i])) for i in best.tolist()]

    def dp_transition(self, x) -> np.ndarray:
        """``Pr(y | x)`` of the DP branch alone, which every unit of a detected span is drawn from
        (``perturb(..., dp_only=True)``); the same as :meth:`transition` unless the mechanism has a
        keep branch (SANTEXT+)."""
        return self.transition(x)

    def transition_rows(self, ids) -> np.ndarray:
        """Rows for many input indices, ``[len(ids), |V|]`` (mechanisms override with a batched form)."""
        return np.stack([self.transition(int(i)) for i in np.asarray(ids)]) if len(ids) else \
            np.zeros((0, self.space.size))

    @abstractmethod
    def privacy(self) -> PrivacyClaim:
        """The guarantee this mechanism claims (docs/algorithms.md)."""

    def settings(self) -> dict:
        """Parameters that define this mechanism instance (stored with results)."""
        return {"mechanism": self.name, "epsilon": self.epsilon, "space": self.space.name,
                "oov": self.oov, "digits": self.digits, "punctuation": self.punctuation}

    # ----- input domain ---------------------------------------------------------------------------
    @property
    def input_mask(self) -> np.ndarray:
        """Boolean mask over V of units this mechanism accepts as inputs (default: all of V)."""
        return np.ones(self.space.size, dtype=bool)

    def index_of(self, x) -> int:
        """Vocabulary index of a unit (string or int), validated against the input domain."""
        if isinstance(x, (int, np.integer)):
            i = int(x)
            if not 0 <= i < self.space.size:
                raise DPTextError(f"unit index {i} outside the vocabulary of {self.space.name}")
        else:
            i = self.space.lookup(str(x))
            if i < 0:
                raise DPTextError(f"unit {x!r} is not in the vocabulary of space {self.space.name}")
        if not self.input_mask[i]:
            raise DPTextError(f"unit {self.space.units[i]!r} is not an input of {self.name} on {self.space.name}")
        return i

    def sample(self, x, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``n`` independent outputs (vocabulary indices) for unit ``x``."""
        i = self.index_of(x)
        return self._sample(np.full(int(n), i, dtype=np.int64), rng or self.rng)

    def pass_through(self, unit: str) -> str | None:
        """Reason to keep ``unit`` unchanged before the vocabulary is consulted, else None."""
        return None

    @property
    def has_keep_rule(self) -> bool:
        """Some rule may send a letter or digit unit unchanged outside a detected span: a word list
        (:meth:`pass_through`: stopwords), ``digits="keep"`` or ``oov="keep"`` (punctuation is no entity)."""
        return type(self).pass_through is not Mechanism.pass_through or self.digits == "keep" or self.oov == "keep"

    # ----- text in, text out ------------------------------------------------------------------------
    def segment(self, text) -> Segmentation:
        if isinstance(text, (list, tuple)):
            return Segmentation(tuple(Piece("" if i == 0 else " ", str(u)) for i, u in enumerate(text)))
        if not isinstance(text, str):
            raise DPTextError(f"cannot perturb a {type(text).__name__}; give text or a list of units")
        return self.space.segment(text)

    def perturb(self, text, *, rng: np.random.Generator | None = None, dp_only: bool = False) -> PerturbResult:
        """Perturb every unit of ``text`` (a string, or a list of units).

        ``dp_only`` (a detected span): no keep rule applies. Every vocabulary unit, punctuation and
        stopwords included, is drawn by the DP branch (SANTEXT+ resamples its frequent units too);
        digit runs outside the sampler are replaced by a uniform draw, and an OOV unit is dropped or
        replaced by a uniform unit (``oov="keep"`` acts as ``"random"``). No rule sends a unit as is
        (a draw may still return it: outcome "self").
        """
        return self._perturb_texts([text], rng or self.rng, dp_only)[0]

    def perturb_many(self, texts, *, rng: np.random.Generator | None = None,
                     dp_only: bool = False) -> list[PerturbResult]:
        """Perturb several texts in one vectorised pass (one policy decision and one lookup per distinct
        unit over all of them, one sampler call): the same law per text as :meth:`perturb`, with every
        text's noise drawn from ``rng``, texts in order."""
        rng = rng or self.rng
        if type(self).perturb is not Mechanism.perturb:  # a mechanism with its own per-text perturb (context)
            return [self.perturb(t, rng=rng, dp_only=dp_only) for t in texts]
        return self._perturb_texts(texts, rng, dp_only)

    def _perturb_texts(self, texts, rng: np.random.Generator, dp_only: bool = False) -> list[PerturbResult]:
        segs = [self.segment(t) for t in texts]
        sizes = [len(s.pieces) for s in segs]
        for n_i in sizes:
            if n_i > MAX_UNITS:
                raise DPTextError(f"input has {n_i} units; the limit per call is {MAX_UNITS} (split it)")
        pieces = [p for s in segs for p in s.pieces]
        outputs, actions, reasons, sensitive, outcomes = self._perturb_pieces(pieces, rng, dp_only)
        results, lo = [], 0
        for seg, n_i in zip(segs, sizes):
            hi = lo + n_i
            out_i = outputs[lo:hi]
            res = PerturbResult(seg.join(out_i), seg.pieces, out_i, actions[lo:hi], reasons[lo:hi],
                                sensitive=None if sensitive is None else sensitive[lo:hi],
                                outcomes=outcomes[lo:hi])
            res.privacy = self.report(res)
            results.append(res)
            lo = hi
        return results

    def _perturb_pieces(self, pieces, rng: np.random.Generator, dp_only: bool = False):
        """``(outputs, actions, reasons, sensitive, outcomes)`` per piece (``sensitive`` None without a
        sensitive split); ``dp_only``: no keep rule (see :meth:`perturb`)."""
        n = len(pieces)
        texts = [p.text for p in pieces]
        # one policy decision and one lookup per distinct unit
        distinct = dict.fromkeys(texts)
        keys = list(distinct)
        d_idx = self.space.lookup_many(keys)
        mask = self.input_mask
        d_reason = []
        policy_of = self._dp_policy_of if dp_only else self._policy_of
        for t, i in zip(keys, d_idx.tolist()):
            reason = policy_of(t)
            d_reason.append(reason if reason is not None else (None if i >= 0 and mask[i] else "oov"))
        code_of = dict(zip(keys, range(len(keys))))
        codes = np.fromiter(map(code_of.__getitem__, texts), dtype=np.int64, count=n)
        # per distinct unit: what happens to it and the reason recorded, then gathered per occurrence
        oov_kind = {"drop": _DROP, "keep": _RANDOM if dp_only else _KEEP}.get(self.oov, _RANDOM)
        d_kind = np.fromiter((_SAMPLE if r is None else _DIGITS if r == "digits!" else oov_kind if r == "oov"
                              else _KEEP for r in d_reason), dtype=np.int8, count=len(keys))
        d_label = np.asarray(["vocab" if r is None else "digits" if r == "digits!" else r for r in d_reason],
                             dtype=object)
        kind = d_kind[codes]
        actions = _ACTIONS[kind].tolist()
        reasons = d_label[codes]
        out_obj = np.asarray(texts, dtype=object)
        out_obj[kind == _DROP] = None
        dig = np.flatnonzero(kind == _DIGITS)
        if len(dig):  # digits replaced by a uniform integer in 1..1000
            out_obj[dig] = [str(v) for v in rng.integers(1, 1001, size=len(dig)).tolist()]
        vocab_pos = np.flatnonzero(kind == _SAMPLE)
        fold = self.space.case_insensitive
        sensitive = None
        if len(vocab_pos):
            out_arr, branches = (self._sample_branches(d_idx[codes[vocab_pos]], rng, force=True) if dp_only
                                 else self._sample_branches(d_idx[codes[vocab_pos]], rng))
            out_obj[vocab_pos] = self.space.unit_strings(out_arr)
            if fold:  # outputs take the input's capitalisation where it has capitals
                d_cased = np.fromiter((t != t.lower() for t in keys), dtype=bool, count=len(keys))
                for p in vocab_pos[d_cased[codes[vocab_pos]]].tolist():
                    out_obj[p] = match_case(texts[p], out_obj[p])
            if branches is not None:
                reasons[vocab_pos] = branches[0]
                sv = np.full(n, None, dtype=object)
                sv[vocab_pos] = branches[1]
                sensitive = [None if v is None else bool(v) for v in sv.tolist()]
        rand_pos = np.flatnonzero(kind == _RANDOM)
        if len(rand_pos):  # a uniform unit of the mechanism's output vocabulary
            support = np.flatnonzero(self.output_mask)
            picks = self.space.unit_strings(support[rng.integers(0, len(support), size=len(rand_pos))]).tolist()
            out_obj[rand_pos] = [match_case(texts[p], o) if fold else o for p, o in zip(rand_pos.tolist(), picks)]
        outcomes = _outcomes(kind, reasons, np.asarray(texts, dtype=object), out_obj, fold)
        outputs, reasons = out_obj.tolist(), reasons.tolist()
        return outputs, actions, reasons, sensitive, outcomes

    def _dp_policy_of(self, t: str) -> str | None:
        """Inside a detected span only what the DP branch cannot take bypasses it: a digit run
        (replaced by a uniform integer unless ``digits="vocab"``)."""
        return "digits!" if self.digits != "vocab" and not t.isalpha() and is_digits(t) else None

    def _policy_of(self, t: str) -> str | None:
        """Why unit ``t`` bypasses the sampler ("punctuation", "digits", "digits!", a subclass reason), or None."""
        if t.isalpha():  # letters are never punctuation or digits
            return self.pass_through(t)
        if self.punctuation == "keep" and is_punctuation(t):
            return "punctuation"
        if self.digits != "vocab" and is_digits(t):
            return "digits" if self.digits == "keep" else "digits!"
        return self.pass_through(t)

    @property
    def output_mask(self) -> np.ndarray:
        """Units this mechanism can output (default: all of V)."""
        return np.ones(self.space.size, dtype=bool)

    def prepare(self, text) -> None:
        """Precompute whatever sampling ``text`` needs (row tables), e.g. before timing or serving."""
        idx = self.space.lookup_many([p.text for p in self.segment(text).pieces])
        idx = idx[idx >= 0]
        self._prepare(distinct(idx[self.input_mask[idx]]))

    def _prepare(self, idx: np.ndarray) -> None:
        """Subclass hook: build tables for input indices ``idx`` (default: nothing to do)."""

    def report(self, result: PerturbResult) -> dict:
        # the claim depends on the instance's settings only: build its dict once, share it read-only
        claim = self.__dict__.get("_claim_dict")
        if claim is None:
            claim = self.__dict__["_claim_dict"] = self.privacy().to_dict()
        rep = {"mechanism": self.name, "epsilon": self.epsilon, "space": self.space.name, "claim": claim}
        counts = result.counts()
        rep.update(counts)
        rep["sent_unchanged"] = counts["kept"] + counts["self"]
        kept = result.kept_units()
        if kept:
            rep["kept_units"] = kept
        return rep

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon}, space={self.space.name!r})"
