"""Synthetic corpora with a skewed (Zipf) unit distribution, for tests and benchmarks.

``zipf_corpus`` draws sentences over ``n_words`` common alphabetic units of a
space: unit of rank ``r`` has probability ``∝ r^(−s)``. With ``topics > 1``
the words are split into topics (clusters of embedding neighbours around
random seeds) and each sentence draws all its words from one topic's own
Zipf law, so the sanitized context carries information about the originals
(what a contextual attack can exploit).
"""

from __future__ import annotations

import numpy as np


def common_words(space, n_words: int, *, skip: int = 50) -> list[int]:
    """Indices of ``n_words`` frequent purely alphabetic units (after the ``skip`` most frequent)."""
    order = np.argsort(-np.asarray(space.freq), kind="stable")
    out = []
    for i in order[skip:].tolist():
        u = space.units[i]
        if u.isalpha() and u.isascii() and len(u) > 2:
            out.append(i)
            if len(out) == n_words:
                break
    return out


def zipf_corpus(space, *, n_sentences: int, n_words: int = 300, length: int = 12, exponent: float = 1.1,
                topics: int = 1, rng: np.random.Generator) -> list[str]:
    """``n_sentences`` sentences of ``length`` words; see the module docstring."""
    words = np.asarray(common_words(space, n_words))
    units = np.asarray(space.units, dtype=object)
    if topics <= 1:
        groups = [words]
    else:
        seeds = words[:topics]  # stable seeds: the most frequent words
        sim = space.cosine(seeds, words)  # [topics, n_words]
        owner = np.argmax(sim, axis=0)
        groups = [words[owner == t] for t in range(topics)]
        groups = [g for g in groups if len(g)]
    laws = []
    for g in groups:
        p = 1.0 / np.arange(1, len(g) + 1) ** exponent
        laws.append(p / p.sum())
    out = []
    which = rng.integers(0, len(groups), size=n_sentences)
    for t in which.tolist():
        pick = rng.choice(groups[t], size=length, p=laws[t])
        out.append(" ".join(units[pick].tolist()))
    return out
