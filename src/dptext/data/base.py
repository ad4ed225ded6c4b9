"""The :class:`Dataset` every evaluation reads.

A dataset is an immutable list of *items*. Each item has a private ``text``
(what a mechanism perturbs and an attack tries to recover) and, depending on
the dataset's ``kind``:

* ``"classification"``: a ``label`` (e.g. the tweets' negative / neutral / positive);
* ``"continuation"``: a human ``reference`` continuation. InferDPT's open-ended
  generation task uses the first 50 tokens of an article as the private
  document and the next 100 as the reference (tokens here are
  whitespace-separated words; InferDPT counted GPT-2 tokens);
* ``"text"``: nothing else (plain user text).

Splits are deterministic given a seed: the item order is permuted by
``numpy.random.default_rng(seed)`` and cut into consecutive blocks of sizes
``floor(cumsum(fractions) * n)``, so ``private`` / ``shadow`` / ``train`` /
``test`` are disjoint, cover every item, and do not change between runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterator, NamedTuple

import numpy as np

from dptext.errors import DPTextError

KINDS = ("classification", "continuation", "text")
SPLITS = ("private", "shadow", "train", "test")
DEFAULT_FRACTIONS = {"private": 0.25, "shadow": 0.25, "train": 0.25, "test": 0.25}
DOC_TOKENS = 50
REF_TOKENS = 100


class Item(NamedTuple):
    """One item of a :class:`Dataset`: ``label`` / ``reference`` are None where the kind has none."""

    id: str
    text: str
    label: str | None = None
    reference: str | None = None


@dataclass(frozen=True, repr=False)
class Dataset:
    """An immutable evaluation set; slice it with :meth:`split`, :meth:`sample` or :meth:`take`.

    ``texts[i]`` is the private text of item ``i``; ``labels`` (classification)
    and ``references`` (continuation) are parallel tuples or ``None``.
    """

    name: str
    kind: str
    texts: tuple[str, ...]
    labels: tuple[str, ...] | None = None
    references: tuple[str, ...] | None = None
    ids: tuple[str, ...] = ()
    source: str = ""
    label_names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DPTextError(f"unknown dataset kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        n = len(self.texts)
        if not self.ids:
            object.__setattr__(self, "ids", tuple(f"{self.name}-{i}" for i in range(n)))
        for what in ("labels", "references", "ids"):
            col = getattr(self, what)
            if col is not None and len(col) != n:
                raise DPTextError(f"dataset {self.name}: {what} has {len(col)} entries for {n} texts")
        if self.kind == "classification" and self.labels is None:
            raise DPTextError(f"dataset {self.name}: a classification set needs labels")
        if self.kind == "continuation" and self.references is None:
            raise DPTextError(f"dataset {self.name}: a continuation set needs references")
        if self.labels is not None and not self.label_names:
            object.__setattr__(self, "label_names", tuple(sorted(set(self.labels))))

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> Item:
        """Item ``i`` (negative indices count from the end); slice with :meth:`take`."""
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"dataset index must be an integer, not {type(i).__name__}; use take() for many")
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"dataset {self.name}: index {i} out of range (size {n})")
        return Item(self.ids[i], self.texts[i], None if self.labels is None else self.labels[i],
                    None if self.references is None else self.references[i])

    def __iter__(self) -> Iterator[Item]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        """One short line, whatever the size: name, kind, size, labels, source."""
        extra = f", labels={'/'.join(self.label_names)}" if self.labels is not None else ""
        return f"Dataset(name={self.name!r}, kind={self.kind!r}, size={len(self)}{extra}, source={self.source!r})"

    # ----- views ------------------------------------------------------------------------------------
    def take(self, indices) -> "Dataset":
        """The items at ``indices`` (in that order)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if len(idx) and (idx.min() < -len(self) or idx.max() >= len(self)):
            raise DPTextError(f"dataset {self.name}: index out of range (size {len(self)})")
        pick = idx.tolist()

        def sel(col):
            return None if col is None else tuple(col[i] for i in pick)

        return replace(self, texts=sel(self.texts), labels=sel(self.labels), references=sel(self.references),
                       ids=sel(self.ids))

    def split_indices(self, seed: int = 0, fractions: dict[str, float] | None = None) -> dict[str, np.ndarray]:
        """Item indices of every split (disjoint, covering all items), deterministic in ``seed``."""
        fr = dict(DEFAULT_FRACTIONS if fractions is None else fractions)
        if not fr or any(v < 0 for v in fr.values()) or abs(sum(fr.values()) - 1.0) > 1e-9:
            raise DPTextError(f"split fractions must be >= 0 and sum to 1, got {fr}")
        perm = np.random.default_rng(seed).permutation(len(self))
        cuts = np.floor(np.cumsum(list(fr.values())) * len(self) + 1e-9).astype(np.int64)
        cuts[-1] = len(self)
        starts = np.concatenate([[0], cuts[:-1]])
        return {name: np.sort(perm[a:b]) for name, a, b in zip(fr, starts, cuts)}

    def split(self, part: str, seed: int = 0, fractions: dict[str, float] | None = None) -> "Dataset":
        """One split (``private``, ``shadow``, ``train`` or ``test`` by default) as a Dataset."""
        parts = self.split_indices(seed, fractions)
        if part not in parts:
            raise DPTextError(f"unknown split {part!r}; choose one of {', '.join(parts)}")
        sub = self.take(parts[part])
        return replace(sub, name=f"{self.name}:{part}")

    def splits(self, seed: int = 0, fractions: dict[str, float] | None = None) -> dict[str, "Dataset"]:
        return {p: self.split(p, seed, fractions) for p in self.split_indices(seed, fractions)}

    def sample(self, n: int, seed: int = 0) -> "Dataset":
        """``min(n, len)`` items drawn without replacement (deterministic in ``seed``), original order kept."""
        if n < 0:
            raise DPTextError(f"cannot sample {n} items")
        if n >= len(self):
            return self
        idx = np.sort(np.random.default_rng(seed).choice(len(self), size=n, replace=False))
        return self.take(idx)

    def filter_label(self, label: str) -> "Dataset":
        if self.labels is None:
            raise DPTextError(f"dataset {self.name} has no labels")
        return self.take([i for i, lab in enumerate(self.labels) if lab == label])

    # ----- text ------------------------------------------------------------------------------------
    def corpus(self) -> list[str]:
        """All text of each item (document and reference joined), e.g. for a shadow corpus."""
        if self.references is None:
            return list(self.texts)
        return [f"{t} {r}" for t, r in zip(self.texts, self.references)]

    def info(self, seed: int = 0) -> dict:
        """Name, kind, size, split sizes and (classification) label counts."""
        out = {"name": self.name, "kind": self.kind, "size": len(self), "source": self.source,
               "splits": {k: len(v) for k, v in self.split_indices(seed).items()},
               "mean_words": float(np.mean([len(t.split()) for t in self.texts])) if len(self) else 0.0}
        if self.labels is not None:
            out["labels"] = dict(sorted(Counter(self.labels).items()))
        return out


def continuation_items(text: str, doc_tokens: int = DOC_TOKENS, ref_tokens: int = REF_TOKENS,
                       max_items: int = 1) -> list[tuple[str, str]]:
    """Cut ``text`` into up to ``max_items`` non-overlapping (document, reference) pairs of whitespace words.

    Each pair is ``doc_tokens`` words then the next ``ref_tokens`` words; a text shorter than
    ``doc_tokens + ref_tokens`` words gives no item.
    """
    words = text.split()
    size = doc_tokens + ref_tokens
    out = []
    for start in range(0, len(words) - size + 1, size):
        out.append((" ".join(words[start : start + doc_tokens]), " ".join(words[start + doc_tokens : start + size])))
        if len(out) >= max_items:
            break
    return out
