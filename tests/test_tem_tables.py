"""TEM's kept per-input tables are bounded: least recently used dropped first, and a call whose inputs could
need more than the bound is sampled in parts; the law of every draw is unchanged."""

from __future__ import annotations

import numpy as np

from dptext.mechanisms import get_mechanism, tem
from stats import chi2_pvalue

LEVEL = 1e-3


def kept_bytes(mech) -> int:
    return sum(t[0].nbytes + t[1].nbytes for t in mech._tables.values())


def test_tables_stay_under_the_bound_and_draws_keep_their_law(monkeypatch):
    mech = get_mechanism("tem", epsilon=4.0, gamma=8.0, seed=0)  # large γ: each L_x holds much of V
    cap = 3 * 16 * mech.space.size  # room for three full tables
    monkeypatch.setattr(tem, "MAX_TABLE_BYTES", cap)
    words = ["house", "doctor", "music", "city", "good", "water", "paper", "green"]
    xs = np.array([mech.index_of(w) for w in words])
    idx = np.repeat(xs, 4000)
    out = mech._sample(idx, np.random.default_rng(2))  # eight inputs: sampled in parts of three
    assert 0 < kept_bytes(mech) <= cap and len(mech._tables) <= 3
    rows = mech.transition_rows(xs)
    for i, x in enumerate(xs):
        assert chi2_pvalue(out[idx == x], rows[i]) > LEVEL, words[i]
    first = int(xs[0])
    mech._sample(np.array([first]), np.random.default_rng(3))  # used again: kept as the most recent
    mech._sample(np.array([int(xs[1])]), np.random.default_rng(3))
    assert list(mech._tables)[-2:] == [first, int(xs[1])] and kept_bytes(mech) <= cap
