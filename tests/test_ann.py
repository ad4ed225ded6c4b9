"""Nearest-unit search of Stencil and the noise mapper: exact, and the IVF option (``exact=False``), smollm2.

Real space, real text (the Lee corpus of gensim's test data), fixed seeds. The IVF index is built once
in the shared cache (about a minute on 2 cores the first time) and memory-mapped afterwards.
"""

import pathlib

import numpy as np
import pytest

from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.mechanisms._fastnn import ann_best_match, best_match
from dptext.spaces import get_space
from dptext.spaces.ann import IvfIndex, index_paths


@pytest.fixture(scope="module")
def space():
    return get_space("smollm2")


@pytest.fixture(scope="module")
def lee(space):
    import gensim

    path = pathlib.Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    return path.read_text("utf-8", errors="replace")[:6000]


def _scores64(space, q: np.ndarray, metric: str, exclude: np.ndarray) -> np.ndarray:
    """Brute-force scores in float64 (cosine up to a positive per-row factor; Euclidean ``2⟨q,e⟩ − ‖e‖²``)."""
    e = space.embeddings.astype(np.float64)
    q64 = q.astype(np.float64)
    s = q64 @ (e / np.linalg.norm(e, axis=1, keepdims=True)).T if metric == "cosine" else \
        2.0 * q64 @ e.T - (e**2).sum(axis=1)[None, :]
    s[np.arange(len(q)), exclude] = -np.inf
    return s


def _stencil_queries(space, text: str, n: int):
    seg = space.segment(text)
    idx = space.lookup_many([p.text for p in seg.pieces])
    pos = np.flatnonzero(idx >= 0)[:n]
    v, defined = get_mechanism("stencil", space=space).quasi_embeddings(seg, pos)
    assert defined.all()
    return v, idx[pos]


def _noisy_queries(space, x: np.ndarray, eta: float, seed: int):
    nm = get_mechanism("noise-mapper", eta=eta, space=space)
    return (space.embeddings[x] + nm.noise(len(x), np.random.default_rng(seed))).astype(np.float32)


def _exact(space, q, metric, x):
    if metric == "cosine":
        return best_match(q, space.normalized, (space.cache_key, metric), exclude=x)
    return best_match(2.0 * q, space.embeddings, (space.cache_key, metric), bias=-space.sq_norms, exclude=x)


def test_exact_option_is_the_brute_force_answer(space, lee):
    v, x = _stencil_queries(space, lee, 300)
    got = get_mechanism("stencil", space=space, exact=True).best_cosine(v, x)
    s, rows = _scores64(space, v, "cosine", x), np.arange(len(x))
    assert np.mean(got == s.argmax(axis=1)) > 0.99  # the rest: ties up to float32 rounding
    np.testing.assert_allclose(s[rows, got], s.max(axis=1), rtol=1e-6, atol=1e-6)

    q = _noisy_queries(space, x, 100.0, seed=2)
    got = get_mechanism("noise-mapper", eta=100.0, space=space)._nearest(
        q, x, np.linalg.norm(q - space.embeddings[x], axis=1))
    s = _scores64(space, q, "euclidean", x)
    assert np.mean(got == s.argmax(axis=1)) > 0.99
    np.testing.assert_allclose(s[rows, got], s.max(axis=1), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("metric", ("cosine", "euclidean"))
def test_ivf_probing_every_list_is_the_exact_search(space, lee, metric):
    """nprobe = L scans every unit with the same float32 scores and tie rule: the exact answer, always."""
    v, x = _stencil_queries(space, lee, 400)
    rng = np.random.default_rng(11)
    q = v if metric == "cosine" else _noisy_queries(space, x, 150.0, seed=3)
    q = np.concatenate([q, rng.standard_normal((100, space.dim)).astype(np.float32)])  # random directions too
    x = np.concatenate([x, rng.integers(0, space.size, 100)])
    index = IvfIndex.of(space, metric)
    assert 100 < index.nlist <= 1024 and np.array_equal(np.sort(index.ids), np.arange(space.size))
    got = ann_best_match(q, space, metric, exclude=x, nprobe=index.nlist)
    assert np.array_equal(got, _exact(space, q, metric, x))


@pytest.mark.parametrize("metric", ("cosine", "euclidean"))
def test_ivf_returns_the_best_unit_of_the_probed_lists(space, lee, metric):
    v, x = _stencil_queries(space, lee, 300)
    q = v if metric == "cosine" else _noisy_queries(space, x, 100.0, seed=4)
    index = IvfIndex.of(space, metric)
    got = ann_best_match(q, space, metric, exclude=x, nprobe=8)
    assert not np.any(got == x)
    probes = index.probes(q, 8)
    s = _scores64(space, q, metric, x)
    allowed = np.zeros(s.shape, dtype=bool)
    for j in range(probes.shape[1]):
        allowed |= index.list_of[None, :] == probes[:, j : j + 1]
    s[~allowed] = -np.inf
    rows = np.arange(len(q))
    assert allowed[rows, got].all()  # the answer lies in a probed list
    np.testing.assert_allclose(s[rows, got], s.max(axis=1), rtol=1e-6, atol=1e-5)


def test_ivf_agreement_with_exact_search_at_a_fixed_seed(space, lee):
    """Measured, not assumed: agreement rises with nprobe and stays high on Stencil and noisy queries."""
    v, x = _stencil_queries(space, lee, 600)
    q = _noisy_queries(space, x, 150.0, seed=5)
    agree = {}
    for label, metric, qq in (("stencil", "cosine", v), ("noise", "euclidean", q)):
        exact = _exact(space, qq, metric, x)
        agree[label] = [np.mean(ann_best_match(qq, space, metric, exclude=x, nprobe=p) == exact)
                        for p in (16, 128)]
    for low, high in agree.values():
        assert high > low + 0.03 and high >= 0.95, agree


def test_index_is_cached_and_reloads_memory_mapped_with_identical_answers(space, lee):
    v, x = _stencil_queries(space, lee, 300)
    first = IvfIndex.of(space, "cosine")
    a1 = ann_best_match(v, space, "cosine", exclude=x, nprobe=32)
    IvfIndex.forget(space)
    again = IvfIndex.of(space, "cosine")
    assert again is not first and not again.built and again.mmapped
    assert all(p.exists() for p in index_paths(space, "cosine"))
    assert np.array_equal(ann_best_match(v, space, "cosine", exclude=x, nprobe=32), a1)
    assert np.array_equal(ann_best_match(v[::7], space, "cosine", exclude=x[::7], nprobe=32), a1[::7])


def test_mechanisms_with_ivf_never_return_the_input_and_declare_the_option(space, lee):
    st = get_mechanism("stencil", space=space, exact=False, nprobe=16)
    assert st.settings()["exact"] is False and st.settings()["nprobe"] == 16
    v, x = _stencil_queries(space, lee, 500)
    assert not np.any(st.best_cosine(v, x) == x)
    x = np.random.default_rng(6).integers(0, space.size, 2000)
    nm = get_mechanism("noise-mapper", eta=100.0, space=space, exact=False, nprobe=16, seed=5)
    assert not np.any(nm._sample(x, np.random.default_rng(6)) == x)
    assert get_mechanism("noise-mapper", eta=10.0, space=space).settings()["exact"] is True
    with pytest.raises(DPTextError):
        get_mechanism("noise-mapper", eta=10.0, space=space, exact=False, nprobe=0)
    with pytest.raises(DPTextError):
        get_mechanism("punctuated-stencil", space=space, nprob=64)
