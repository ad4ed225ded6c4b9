"""Corpus-derived vocabularies and frequencies shared by SANTEXT and CUSTEXT.

docs/algorithms.md: ``V`` is the corpus vocabulary intersected with the embedding
vocabulary and frequencies come from the corpus; without a corpus, ``V`` is
the whole space and its frequency order (the space's ``freq``) stands in.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.spaces import EmbeddingSpace


def distinct(ids) -> np.ndarray:
    """Sorted distinct values of ``ids``: ``np.unique`` without its lazy ``numpy.ma`` import (~20 ms the
    first time in a fresh process, on the path of every cold perturbation)."""
    s = np.sort(np.asarray(ids).ravel())
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def corpus_counts(space: EmbeddingSpace, corpus) -> np.ndarray:
    """Occurrences of each vocabulary unit in ``corpus`` (an iterable of texts)."""
    if isinstance(corpus, str):
        corpus = [corpus]
    counts = np.zeros(space.size, dtype=np.float64)
    for text in corpus:
        idx = space.lookup_many([p.text for p in space.segment(text).pieces])
        idx = idx[idx >= 0]
        np.add.at(counts, idx, 1.0)
    if not counts.any():
        raise DPTextError(f"the corpus has no unit in the vocabulary of {space.name}")
    return counts


def vocabulary(space: EmbeddingSpace, corpus=None) -> tuple[np.ndarray, np.ndarray]:
    """(mask of V over the space, frequencies over the space; 0 outside V)."""
    if corpus is None:
        return np.ones(space.size, dtype=bool), np.asarray(space.freq, dtype=np.float64)
    counts = corpus_counts(space, corpus)
    return counts > 0, counts


def least_frequent(mask: np.ndarray, freq: np.ndarray, fraction: float) -> np.ndarray:
    """Mask of the least frequent ``fraction`` of the units in ``mask`` (ties: later index is rarer)."""
    members = np.flatnonzero(mask)
    n = int(np.ceil(fraction * len(members)))
    # sort by frequency ascending, then by index descending (frequency-ordered spaces)
    order = np.lexsort((-members, freq[members]))
    out = np.zeros_like(mask)
    out[members[order[:n]]] = True
    return out


def corpus_key(corpus) -> str | None:
    if corpus is None:
        return None
    from dptext.cache import key_of

    return key_of(list(corpus) if not isinstance(corpus, str) else [corpus])
