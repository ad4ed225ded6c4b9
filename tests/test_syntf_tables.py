"""SynTF's sampling tables, built for every input at once from the cached pair cosines: the law they encode
is the exponential mechanism's row, exactly, and the per-row cumulative sums are numpy's own."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.mechanisms import get_mechanism
from dptext.mechanisms._rows import segmented_cumsum


def test_segmented_cumsum_is_a_per_row_cumsum():
    rng = np.random.default_rng(3)
    lens = np.array([0, 1, 2, 3, 4, 5, 0, 8, 9, 17, 1, 64, 65, 0], dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum(lens)))
    vals = rng.exponential(size=int(ptr[-1]))
    got = segmented_cumsum(vals, ptr)
    for i in range(len(lens)):
        assert np.array_equal(got[ptr[i] : ptr[i + 1]], np.cumsum(vals[ptr[i] : ptr[i + 1]])), i


@pytest.mark.parametrize("eps", [7.0, 3.0])
def test_the_tables_encode_the_exact_rows(eps):
    # the tables are cached on disk per ε: the second ε must map its own entry, not the first one's
    mech = get_mechanism("syntf", epsilon=eps, seed=0)
    mech._prepare(None)
    ids, cdf, starts, ends, p_ex = mech._flat
    xs = [mech.index_of(w) for w in ("house", "music", "the", "good")] + [mech.space.size - 1]
    rows = mech.transition_rows(xs)
    n_c = float(len(mech.support))
    for x, row in zip(xs, rows):
        law = np.zeros(mech.space.size)
        law[mech.support] = (1.0 - p_ex[x]) / n_c  # the uniform part
        share = np.diff(np.concatenate(([x], cdf[starts[x] : ends[x]])))  # the excess part's shares
        np.add.at(law, ids[starts[x] : ends[x]], p_ex[x] * share)
        assert np.allclose(law, row, rtol=1e-9, atol=1e-15), mech.space.units[x]
    assert p_ex[mech.space.size - 1] == 0.0 or mech.seen[-1]  # an unseen input: the uniform part only
