"""HNSW search for Stencil and the noise mapper (``exact=False``) on the real smollm2 space, fixed seeds."""

import numpy as np
import pytest

from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.mechanisms._fastnn import ann_best_match
from dptext.spaces import get_space
from dptext.spaces.ann import AnnIndex, index_path


@pytest.fixture(scope="module")
def space():
    return get_space("smollm2")


def _text(space, n_words: int, seed: int) -> str:
    """Words drawn from the 5,000 most frequent lower-case alphabetic units."""
    order = np.argsort(-space.freq, kind="stable")
    words = [space.units[i] for i in order if space.units[i].isalpha() and space.units[i].islower()][:5000]
    rng = np.random.default_rng(seed)
    return " ".join(words[i] for i in rng.integers(0, len(words), n_words))


def _scores64(space, q: np.ndarray, metric: str, exclude: np.ndarray) -> np.ndarray:
    """Brute-force scores in float64 (cosine up to a per-row factor; Euclidean: ``2⟨q,e⟩ − ‖e‖²``)."""
    q64 = q.astype(np.float64)
    if metric == "cosine":
        e = space.embeddings.astype(np.float64)
        s = q64 @ (e / np.linalg.norm(e, axis=1, keepdims=True)).T
    else:
        e = space.embeddings.astype(np.float64)
        s = 2.0 * q64 @ e.T - (e**2).sum(axis=1)[None, :]
    s[np.arange(len(q)), exclude] = -np.inf
    return s


def _stencil_queries(space, n_words: int, seed: int):
    st = get_mechanism("stencil", space=space)
    seg = space.segment(_text(space, n_words, seed))
    idx = space.lookup_many([p.text for p in seg.pieces])
    pos = np.flatnonzero(idx >= 0)
    v, defined = st.quasi_embeddings(seg, pos)
    assert defined.all()
    return v, idx[pos]


def _noisy_queries(space, n: int, seed: int, eta: float = 100.0):
    nm = get_mechanism("noise-mapper", eta=eta, space=space)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, space.size, n)
    return (space.embeddings[x] + nm.noise(n, rng)).astype(np.float32), x


def test_exact_option_is_the_brute_force_answer(space):
    v, x = _stencil_queries(space, 400, seed=1)
    st = get_mechanism("stencil", space=space, exact=True)
    s = _scores64(space, v, "cosine", x)
    got, best = st.best_cosine(v, x), s.argmax(axis=1)
    rows = np.arange(len(x))
    assert np.mean(got == best) > 0.99  # the rest: ties up to float32 rounding
    np.testing.assert_allclose(s[rows, got], s[rows, best], rtol=1e-6, atol=1e-6)

    q, x = _noisy_queries(space, 400, seed=2)
    nm = get_mechanism("noise-mapper", eta=100.0, space=space, exact=True)
    got = nm._nearest(q, x, np.linalg.norm(q - space.embeddings[x], axis=1))
    s = _scores64(space, q, "euclidean", x)
    best, rows = s.argmax(axis=1), np.arange(len(x))
    assert np.mean(got == best) > 0.99
    np.testing.assert_allclose(s[rows, got], s[rows, best], rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("metric", ("cosine", "euclidean"))
def test_ann_excludes_the_input_and_returns_the_best_candidate(space, metric):
    rng = np.random.default_rng(4)
    x = rng.choice(space.size, 2000, replace=False)
    q = (space.normalized if metric == "cosine" else space.embeddings)[x]  # x itself is the index's top hit
    got = ann_best_match(q, space, metric, exclude=x, ef_search=64)
    assert not np.any(got == x)
    cand = AnnIndex.of(space, metric).candidates(q, 32, 64)
    assert np.mean((cand == x[:, None]).any(axis=1)) > 0.5  # the exclusion had x to remove
    s = _scores64(space, q, metric, x)
    cs = np.take_along_axis(s, np.maximum(cand, 0), axis=1)
    cs[cand < 0] = -np.inf
    best_cand = cand[np.arange(len(x)), cs.argmax(axis=1)]
    rows = np.arange(len(x))
    np.testing.assert_allclose(s[rows, got], s[rows, best_cand], rtol=1e-6, atol=1e-5)

    if metric == "euclidean":  # the mechanism: exact pruning first, the index for the rest; never x
        nm = get_mechanism("noise-mapper", eta=100.0, space=space, exact=False, seed=5)
        assert not np.any(nm._sample(x, np.random.default_rng(6)) == x)


def test_ef_search_is_honoured_and_raises_agreement(space):
    v, x = _stencil_queries(space, 300, seed=7)
    exact = get_mechanism("stencil", space=space).best_cosine(v, x)
    low = np.mean(ann_best_match(v, space, "cosine", exclude=x, ef_search=32) == exact)
    high = np.mean(ann_best_match(v, space, "cosine", exclude=x, ef_search=512) == exact)
    assert high > low + 0.03, (low, high)


def test_cached_index_reloads_memory_mapped_with_identical_answers(space):
    q, x = _noisy_queries(space, 1000, seed=8)
    first = AnnIndex.of(space, "euclidean")
    c1 = first.candidates(q, 32, 64)
    a1 = ann_best_match(q, space, "euclidean", exclude=x, ef_search=64)
    m1 = get_mechanism("stencil", space=space, exact=False).perturb(_text(space, 200, seed=9)).text
    AnnIndex.forget(space)
    again = AnnIndex.of(space, "euclidean")
    assert again is not first and not again.built and again.mmapped and index_path(space, "euclidean").exists()
    assert np.array_equal(again.candidates(q, 32, 64), c1)
    assert np.array_equal(ann_best_match(q, space, "euclidean", exclude=x, ef_search=64), a1)
    assert np.array_equal(again.candidates(q[::7], 32, 64), c1[::7])  # the same query, another batch
    AnnIndex.forget(space)
    assert get_mechanism("stencil", space=space, exact=False).perturb(_text(space, 200, seed=9)).text == m1


def test_options_are_declared_and_checked(space):
    st = get_mechanism("stencil", space=space, exact=False, ef_search=128)
    assert st.settings()["exact"] is False and st.settings()["ef_search"] == 128
    assert get_mechanism("noise-mapper", eta=10.0, space=space).settings()["exact"] is True
    with pytest.raises(DPTextError):
        get_mechanism("noise-mapper", eta=10.0, space=space, exact=False, ef_search=0)
    with pytest.raises(DPTextError):
        get_mechanism("punctuated-stencil", space=space, ef_searc=64)
