"""Lossy mappers (docs/algorithms.md, Harel et al. section 2): many-to-one token maps, no DP claim.

The vocabulary ``V`` is partitioned into small groups; every unit of a group
is replaced by the group's *representative*. The output is deterministic given
the partition, so the mapper is not differentially private: its protection is
the ambiguity ``|group|^m`` of a length-``m`` sequence, which the beam oracle
attacker (docs/algorithms.md) searches.

* ``2-random`` / ``3-random`` (``k-Random``): a key-seeded permutation of ``V``
  cut into consecutive groups of ``k``; the ``|V| mod k`` leftover units join
  the first groups one each (so no unit is ever alone); the representative is
  a key-seeded uniform member.
* ``high-freq`` / ``low-freq``: units sorted by descending frequency (ties by
  index); rank ``r`` is paired with rank ``r + ⌊|V|/2⌋`` (``0 <= r < ⌊|V|/2⌋``);
  for odd ``|V|`` the rarest unit joins the last pair. The representative is
  the most frequent (``high-freq``) or least frequent (``low-freq``) member.

Everything is deterministic given ``key`` (an int or a string). The default
key is ``seed`` when one is given, else 63 bits of OS entropy; it is recorded
in :meth:`settings`. The oracle attacker reads the partition through
``group_of``, ``groups``, ``representative`` and :meth:`preimage`.
"""

from __future__ import annotations

import hashlib
import secrets
from functools import cached_property

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register


def key_rng(name: str, key) -> np.random.Generator:
    """A generator determined by (mapper name, key) only."""
    digest = hashlib.sha256(f"{name}\x00{key!r}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


class LossyMapper(Mechanism):
    """Base of the lossy mappers: subclasses build ``(group_of, representative)``."""

    default_space = "smollm2"
    contextual = False
    dp = False  # no differential-privacy claim
    params = {"key": None}

    def __init__(self, *, epsilon: float | None = None, key: int | str | None = None, **kwargs) -> None:
        super().__init__(epsilon=1.0 if epsilon is None else epsilon, **kwargs)
        self.epsilon = None  # no privacy parameter: a given --epsilon is ignored
        if key is None:
            key = self.seed if self.seed is not None else secrets.randbits(63)
        self.key = key
        group_of, rep = self._build_groups(self.space.size)
        self.group_of = np.asarray(group_of, dtype=np.int64)
        self.representative = np.asarray(rep, dtype=np.int64)
        self.mapping = self.representative[self.group_of]
        if not np.array_equal(self.group_of[self.representative], np.arange(len(self.representative))):
            raise AssertionError("a representative lies outside its group")
        self._group_of_rep = np.full(self.space.size, -1, dtype=np.int64)
        self._group_of_rep[self.representative] = np.arange(len(self.representative))

    def _build_groups(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    # ----- the partition (for attackers and tests) -------------------------------------------------
    @property
    def n_groups(self) -> int:
        return len(self.representative)

    @cached_property
    def groups(self) -> list[np.ndarray]:
        """Member indices of every group (group ``g`` is ``groups[g]``), sorted."""
        order = np.argsort(self.group_of, kind="stable")
        bounds = np.cumsum(np.bincount(self.group_of, minlength=self.n_groups))[:-1]
        return np.split(order, bounds)

    def members(self, x) -> np.ndarray:
        """All units sharing ``x``'s group (vocabulary indices)."""
        return self.groups[int(self.group_of[self.index_of(x)])]

    def preimage(self, y) -> np.ndarray:
        """Units that map to the observed output ``y`` (empty when ``y`` is no representative)."""
        j = self.index_of(y)
        g = int(self._group_of_rep[j])
        return self.groups[g] if g >= 0 else np.empty(0, dtype=np.int64)

    def is_representative(self, y) -> bool:
        return bool(self._group_of_rep[self.index_of(y)] >= 0)

    # ----- mechanism API -------------------------------------------------------------------------
    @property
    def output_mask(self) -> np.ndarray:
        mask = np.zeros(self.space.size, dtype=bool)
        mask[self.representative] = True
        return mask

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.mapping[np.asarray(idx, dtype=np.int64)]

    def transition(self, x, context=None) -> np.ndarray:
        row = np.zeros(self.space.size, dtype=np.float64)
        row[self.mapping[self.index_of(x)]] = 1.0
        return row

    def settings(self) -> dict:
        return {**super().settings(), "key": self.key, "groups": self.n_groups}

    def privacy(self) -> PrivacyClaim:
        sizes = np.bincount(self.group_of)
        return PrivacyClaim(
            mechanism=self.name, epsilon=None, kind="none", bound=None,
            scope="no DP claim: a deterministic many-to-one map; an observed unit hides its original "
                  "only among the members of its group",
            details={"groups": self.n_groups, "group_size_min": int(sizes.min()),
                     "group_size_max": int(sizes.max())},
        )


class RandomMapper(LossyMapper):
    group_size: int = 2

    def _build_groups(self, n: int):
        k = self.group_size
        rng = key_rng(self.name, self.key)
        perm = rng.permutation(n)
        n_groups = max(1, n // k)
        group_of = np.empty(n, dtype=np.int64)
        pos = np.arange(n)
        g = np.where(pos < n_groups * k, pos // k, pos - n_groups * k)  # leftovers join groups 0, 1, ...
        group_of[perm] = g
        sizes = np.bincount(group_of, minlength=n_groups)
        # representative: a uniform member, the pick-th in permutation order within the group
        pick = (rng.random(n_groups) * sizes).astype(np.int64)
        order = np.argsort(group_of[perm], kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        rep = perm[order[starts + pick]]
        return group_of, rep


@register("2-random")
class TwoRandomMapper(RandomMapper):
    """2-Random lossy mapper: random pairs, random representative (no DP claim)."""

    group_size = 2


@register("3-random")
class ThreeRandomMapper(RandomMapper):
    """3-Random lossy mapper: random triplets, random representative (no DP claim)."""

    group_size = 3


class FrequencyMapper(LossyMapper):
    keep_frequent: bool = True

    def _build_groups(self, n: int):
        if n < 2:
            raise DPTextError(f"space {self.space.name} has fewer than 2 units; nothing to pair")
        order = np.lexsort((np.arange(n), -self.space.freq))  # descending frequency, ties by index
        h = n // 2
        rank_group = np.concatenate([np.arange(h), np.arange(h), [h - 1] * (n - 2 * h)])
        group_of = np.empty(n, dtype=np.int64)
        group_of[order] = rank_group
        if self.keep_frequent:
            rep = order[:h]
        else:
            rep = order[h : 2 * h].copy()
            if n % 2:
                rep[h - 1] = order[n - 1]  # the rarest unit represents the last group of three
        return group_of, rep


@register("high-freq")
class HighFreqMapper(FrequencyMapper):
    """High-freq lossy mapper: rank r paired with rank r+|V|/2, the frequent one kept (no DP claim)."""

    keep_frequent = True


@register("low-freq")
class LowFreqMapper(FrequencyMapper):
    """Low-freq lossy mapper: rank r paired with rank r+|V|/2, the rare one kept (no DP claim)."""

    keep_frequent = False
