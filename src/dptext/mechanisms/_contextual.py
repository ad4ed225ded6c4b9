"""Context-dependent mechanisms (Cape, Stencil; docs/algorithms.md): the output of a unit depends on the prompt.

The base class's ``perturb`` is reused unchanged (segmentation, punctuation,
digits, OOV and pass-through policies, records, report). Two protected hooks
carry the prompt to the sampler: :meth:`segment` remembers the segmentation
of the text being perturbed, and :meth:`_sample` recovers the positions of
the units it is asked to replace (the same rule as ``Mechanism.perturb``) and
hands both to :meth:`_sample_in_context`. A mismatch between the two fails
closed (:class:`PrivacyError`) before anything is emitted.

``transition(x, context, position)`` and ``sample(x, n, context=...)`` take
the prompt explicitly. :meth:`ContextualMechanism.column_in_context` gives the
column ``Pr(y | x, c with x at i)`` over candidates ``x`` (the attacks' view);
the default evaluates ``_row_in_context`` once per candidate, and a mechanism
with a cheaper exact form overrides it (Cape, Stencil). Without a context the unit is its own one-unit prompt,
which is what ``dptext transition`` shows; ``dptext context-transition``
passes ``--context``.
"""

from __future__ import annotations

import threading
from abc import abstractmethod

import numpy as np

from dptext.errors import DPTextError, PrivacyError
from dptext.mechanisms.base import Mechanism
from dptext.resources import is_digits, is_punctuation
from dptext.text import Piece, Segmentation


def substitute(seg: Segmentation, i: int, unit: str) -> Segmentation:
    """``seg`` with the unit of piece ``i`` replaced by ``unit`` (whitespace kept)."""
    pieces = list(seg.pieces)
    pieces[i] = Piece(pieces[i].ws, unit)
    return Segmentation(tuple(pieces), seg.trailing, seg.clitics)


class ContextualMechanism(Mechanism):
    contextual = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._lock = threading.RLock()
        self._active: Segmentation | None = None
        self._dp_only = False  # set by perturb(dp_only=True) for the call (a detected span)

    @property
    def has_keep_rule(self) -> bool:
        """False: every draw reads the whole text as its context, so under policy ``all`` the text is not cut
        around detected entities (:func:`dptext.privacy.policy.plan_for`); its stopword rule keeps no name."""
        return False

    # ----- what a contextual mechanism provides ------------------------------------------------------
    @abstractmethod
    def _sample_in_context(self, seg: Segmentation, pos: np.ndarray, idx: np.ndarray,
                           rng: np.random.Generator) -> np.ndarray:
        """Outputs for the units ``idx`` found at piece positions ``pos`` of ``seg`` (``pos`` may repeat)."""

    @abstractmethod
    def _row_in_context(self, seg: Segmentation, pos: int, i: int) -> np.ndarray:
        """Exact ``Pr(y | x = unit i at position pos of seg)`` over V."""

    # ----- hooks into Mechanism.perturb --------------------------------------------------------------
    def perturb(self, text, *, rng: np.random.Generator | None = None, dp_only: bool = False):
        with self._lock:
            self._active, self._dp_only = None, dp_only
            try:
                return super().perturb(text, rng=rng, dp_only=dp_only)
            finally:
                self._active, self._dp_only = None, False

    def segment(self, text) -> Segmentation:
        seg = super().segment(text)
        self._active = seg
        return seg

    def vocab_positions(self, seg: Segmentation) -> tuple[np.ndarray, np.ndarray]:
        """Positions (and vocabulary indices) that ``Mechanism.perturb`` hands to the sampler."""
        idx = self.space.lookup_many([p.text for p in seg.pieces])
        mask = self.input_mask
        pos = []
        dp_only = self._dp_only and seg is self._active  # a detected span: no keep rule
        for i, piece in enumerate(seg.pieces):
            t = piece.text
            if dp_only:
                if self._dp_policy_of(t) is None and idx[i] >= 0 and mask[idx[i]]:
                    pos.append(i)
                continue
            if self.punctuation == "keep" and is_punctuation(t):
                continue
            if self.digits != "vocab" and is_digits(t):
                continue
            if self.pass_through(t) is not None:
                continue
            if idx[i] >= 0 and mask[idx[i]]:
                pos.append(i)
        pos = np.asarray(pos, dtype=np.int64)
        return pos, idx[pos]

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        seg = self._active
        if seg is None:  # no prompt (e.g. Mechanism.sample): every unit is its own prompt
            out = np.empty(len(idx), dtype=np.int64)
            for u in np.unique(idx):
                at = np.flatnonzero(idx == u)
                out[at] = self._sample_in_context(self.lone(int(u)), np.zeros(len(at), np.int64), idx[at], rng)
            return out
        pos, expect = self.vocab_positions(seg)
        if not np.array_equal(expect, idx):
            raise PrivacyError(f"{self.name}: internal position mismatch; nothing was emitted")
        return self._sample_in_context(seg, pos, idx, rng)

    # ----- explicit context ----------------------------------------------------------------------------
    def lone(self, i: int) -> Segmentation:
        return Segmentation((Piece("", self.space.units[i]),))

    def locate(self, x, context=None, position: int | None = None) -> tuple[Segmentation, int, int]:
        """(segmentation, piece position, vocabulary index) of unit ``x`` in ``context``."""
        i = self.index_of(x)
        if context is None:
            if position not in (None, 0):
                raise DPTextError("a position needs a context")
            return self.lone(i), 0, i
        seg = Mechanism.segment(self, context)
        pos, idx = self.vocab_positions(seg)
        if position is None:
            hits = pos[idx == i]
            if not len(hits):
                raise DPTextError(f"unit {self.space.units[i]!r} is not a perturbable unit of the context")
            return seg, int(hits[0]), i
        if position not in set(pos.tolist()):
            raise DPTextError(f"position {position} of the context is not a perturbable unit "
                              f"(perturbable positions: {pos.tolist()[:20]})")
        if int(idx[pos.tolist().index(position)]) != i:
            raise DPTextError(f"position {position} of the context holds {seg.pieces[position].text!r}, "
                              f"not {self.space.units[i]!r}")
        return seg, int(position), i

    def transition(self, x, context=None, position: int | None = None) -> np.ndarray:
        """``Pr(y | x)`` given the prompt ``context`` (x's first occurrence unless ``position``)."""
        seg, p, i = self.locate(x, context, position)
        return self._row_in_context(seg, p, i)

    def sample(self, x, n: int, rng: np.random.Generator | None = None, context=None,
               position: int | None = None) -> np.ndarray:
        seg, p, i = self.locate(x, context, position)
        return self._sample_in_context(seg, np.full(int(n), p, np.int64), np.full(int(n), i, np.int64),
                                       rng or self.rng)

    def column_in_context(self, seg: Segmentation, i: int, cand: np.ndarray, y: int, *,
                          chunk: int = 256) -> np.ndarray:
        """``Pr(y | x, seg with x at piece i)`` for every vocabulary index ``x`` in ``cand`` (float64).

        Default: the exact row of each candidate in its own substituted prompt (one
        ``_row_in_context`` per candidate; ``chunk`` is unused here).
        """
        units = self.space.units
        cand = np.asarray(cand, dtype=np.int64)
        return np.asarray([self._row_in_context(substitute(seg, i, units[x]), i, int(x))[y] for x in cand.tolist()],
                          dtype=np.float64)
