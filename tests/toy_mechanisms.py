"""Reference mechanisms for attack tests: the identity and a uniform sampler over a word list."""

from __future__ import annotations

import numpy as np

from dptext.mechanisms.base import Mechanism, PrivacyClaim


class _Restricted(Mechanism):
    """Test mechanisms over a fixed word list ``words`` (space indices; ``None`` = all of V)."""

    def __init__(self, *, words=None, **kw):
        super().__init__(**kw)
        self.mask = np.zeros(self.space.size, dtype=bool)
        self.mask[slice(None) if words is None else np.asarray(words)] = True
        self.words = np.flatnonzero(self.mask)

    @property
    def input_mask(self):
        return self.mask

    @property
    def output_mask(self):
        return self.mask

    def privacy(self):
        return PrivacyClaim(self.name, self.epsilon, "none", None, "test")


class Identity(_Restricted):
    name = "identity"

    def _sample(self, idx, rng):
        return idx.copy()

    def transition(self, x):
        row = np.zeros(self.space.size)
        row[self.index_of(x)] = 1.0
        return row


class Uniform(_Restricted):
    name = "uniform"

    def _sample(self, idx, rng):
        return self.words[rng.integers(0, len(self.words), size=len(idx))]

    def transition(self, x):
        self.index_of(x)
        row = np.zeros(self.space.size)
        row[self.words] = 1.0 / len(self.words)
        return row
