"""Core mechanisms: exact rows, sampler agreement, edge cases (SPEC 1.1-1.3)."""

import math

import numpy as np
import pytest

from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.rantext import noise_divisor
from stats import chi2_pvalue

CORE = ["rantext", "santext", "santext+", "custext", "custext+"]
UNITS = {"rantext": ["hospital", "quickly", "the"], "default": ["hospital", "quickly", "the"]}


@pytest.fixture(scope="module")
def mechs():
    cache = {}

    def get(name, eps, **kw):
        key = (name, eps, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = get_mechanism(name, epsilon=eps, seed=1234, **kw)
        return cache[key]

    return get


@pytest.mark.parametrize("name", CORE)
@pytest.mark.parametrize("eps", [1.0, 6.0])
def test_rows_sum_to_one_and_sampler_matches(mechs, name, eps):
    m = mechs(name, eps)
    rng = np.random.default_rng(99)
    for unit in UNITS["default"]:
        row = m.transition(unit)
        assert row.shape == (m.space.size,)
        assert abs(row.sum() - 1.0) < 1e-9
        assert (row >= 0).all()
        draws = m.sample(unit, 20_000, rng=rng)
        p = chi2_pvalue(draws, row)
        assert p > 1e-4, f"{name} eps={eps} unit={unit}: chi-square p={p:.2e}"


def test_sampler_disagreeing_with_row_is_detected(mechs):
    """The goodness-of-fit check has power: SANTEXT draws at eps=1 vs the eps=6 row."""
    a, b = mechs("santext", 1.0), mechs("santext", 6.0)
    draws = a.sample("hospital", 20_000, rng=np.random.default_rng(5))
    assert chi2_pvalue(draws, b.transition("hospital")) < 1e-6


def test_santext_row_equals_closed_form(mechs):
    m = mechs("santext", 2.0)
    x = m.space.lookup("hospital")
    e = m.space.embeddings.astype(np.float64)
    d = np.linalg.norm(e - e[x], axis=1)
    w = np.exp(-2.0 * d / 2)
    expected = w / w.sum()
    row = m.transition("hospital")
    np.testing.assert_allclose(row, expected, rtol=1e-4, atol=1e-12)


def test_santext_plus_sensitive_split_and_keep_probability(mechs):
    m = mechs("santext+", 2.0)
    assert m.w == 0.9 and m.p == 0.3
    assert m.sensitive.sum() == math.ceil(0.9 * m.space.size)
    # the most frequent units are non-sensitive, the rarest sensitive
    assert not m.sensitive[m.space.lookup("the")] and m.sensitive[m.space.size - 1]
    the = m.space.lookup("the")
    row = m.transition("the")
    assert row[the] == pytest.approx(0.7, abs=1e-12)  # kept w.p. 1-p, and "the" is not in V_s
    assert row[~m.sensitive].sum() == pytest.approx(0.7, abs=1e-12)


def test_santext_plus_corpus_frequencies():
    corpus = ["alpha beta beta gamma gamma gamma delta delta delta delta"] * 3
    m = get_mechanism("santext+", epsilon=1, corpus=corpus, w=0.5, seed=0)
    assert m.input_mask.sum() == 4
    sens = {m.space.units[i] for i in np.flatnonzero(m.sensitive)}
    assert sens == {"alpha", "beta"}
    with pytest.raises(DPTextError):
        m.transition("hospital")  # not in the corpus vocabulary


def test_custext_lists_conservative_disjoint(mechs):
    """Each list is its seed's K nearest units among those no earlier (more frequent) seed took."""
    m = mechs("custext", 2.0)
    lists, n, k = m.lists, m.space.size, 20
    assert lists.shape[1] == k and (lists >= 0).all()  # 50,000 units = 2,500 full clusters
    # identical or disjoint lists: a partition
    canon = np.unique(np.sort(lists, axis=1), axis=0)
    assert len(canon) == n // k and len(np.unique(canon.ravel())) == n
    # the seed of a cluster is its most frequent member; clusters are formed in seed frequency order
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), -m.freqs))] = np.arange(n)
    seeds = canon[np.arange(len(canon)), np.argmin(rank[canon], axis=1)]
    order = np.argsort(rank[seeds])
    seeds, canon = seeds[order], canon[order]
    step = np.empty(n, dtype=np.int64)  # when each unit left the pool
    step[canon.ravel()] = np.repeat(np.arange(len(canon)), k)
    assert (lists == lists[seeds[step]]).all()  # every member carries its seed's list
    emb = m.space.normalized
    for s0 in range(0, len(seeds), 256):
        sl = slice(s0, s0 + 256)
        sims = emb[seeds[sl]] @ emb.T  # [seeds, V]
        in_pool = step[None, :] >= np.arange(len(seeds))[sl, None]
        member = np.zeros_like(in_pool)
        member[np.arange(in_pool.shape[0])[:, None], canon[sl]] = True
        worst_member = np.where(member & (np.arange(n)[None, :] != seeds[sl, None]), sims, np.inf).min(axis=1)
        best_outsider = np.where(in_pool & ~member, sims, -np.inf).max(axis=1)
        assert (best_outsider <= worst_member + 1e-6).all()


def test_custext_probabilities_closed_form(mechs):
    m = mechs("custext", 3.0)
    x = m.space.lookup("hospital")
    lst = m.lists[x]
    s = m.space.normalized[lst] @ m.space.normalized[x]
    s_hat = (s - s.min()) / (s.max() - s.min())
    w = np.exp(3.0 * s_hat / 2)
    row = m.transition("hospital")
    np.testing.assert_allclose(row[lst], w / w.sum(), rtol=1e-5)
    assert row.sum() == pytest.approx(1.0, abs=1e-12)


def test_custext_plus_keeps_stopwords(mechs):
    m = mechs("custext+", 1.0)
    r = m.perturb("the hospital and the doctors")
    outs = {u.original: (u.output, u.action, u.reason) for u in r.units}
    assert outs["the"] == ("the", "kept", "stopword") and outs["and"] == ("and", "kept", "stopword")


def test_rantext_noise_divisor_constants():
    """Published Z(ε): values computed independently (40-digit decimal arithmetic of InferDPT's fit)."""
    assert noise_divisor(1.0) == 1.0 and noise_divisor(0.5) == 0.5 and noise_divisor(1.999) == 1.999
    known = {2.0: 9.119999996010929, 3.0: 9.359963721484277, 6.0: 9.382950695579084,
             10.0: 9.394444184777254, 14.0: 9.401167445231224}
    for eps, z in known.items():
        assert noise_divisor(eps) == pytest.approx(z, rel=1e-12)
    # the constants as printed in the paper (4 decimals) give the same curve away from ε = 2
    a, b, c, d = 0.0165, 19.0648, -38.1294, 9.3111
    for eps in (6.0, 10.0, 14.0):
        assert noise_divisor(eps) == pytest.approx(a * math.log(b * eps + c) + d, abs=2e-3)


def test_rantext_adjacency_contains_x_and_shrinks(mechs):
    lo, hi = mechs("rantext", 1.0), mechs("rantext", 6.0)
    rng = np.random.default_rng(3)
    for unit in ("hospital", "the"):
        assert lo.transition(unit)[lo.space.lookup(unit)] > 0
        s1 = lo.candidate_set_sizes(unit, 2000, rng=rng)
        s6 = hi.candidate_set_sizes(unit, 2000, rng=rng)
        assert s1.min() >= 1 and s6.min() >= 1
        assert s6.mean() / hi.space.size < s1.mean() / lo.space.size


@pytest.mark.parametrize("name", CORE)
def test_epsilon_to_zero_is_uniform_over_support(name):
    m = get_mechanism(name, epsilon=1e-7, seed=0)
    unit = "surgeon" if name == "santext+" else "hospital"  # surgeon: rank 7419, a sensitive unit
    x = m.space.lookup(unit)
    row = m.transition(unit)
    support = np.flatnonzero(row > 0)
    expected_support = {"rantext": m.space.size, "santext": m.space.size, "custext": 20, "custext+": 20}.get(
        name) or int(m.sensitive.sum())
    assert len(support) == expected_support
    assert row[support].max() / row[support].min() == pytest.approx(1.0, abs=1e-4)
    if name == "santext+":
        assert m.sensitive[x]


@pytest.mark.parametrize("name", CORE)
def test_large_epsilon_concentrates_on_x(name):
    m = get_mechanism(name, epsilon=2000.0, seed=0)
    if name != "santext+":
        assert m.transition("hospital")[m.space.lookup("hospital")] > 0.99
        return
    assert m.transition("surgeon")[m.space.lookup("surgeon")] > 0.99  # sensitive: itself
    # non-sensitive "hospital": kept w.p. 1-p, else its nearest sensitive unit
    x = m.space.lookup("hospital")
    row = m.transition("hospital")
    d = m.space.distances([x])[0]
    nearest_sensitive = np.flatnonzero(m.sensitive)[np.argmin(d[m.sensitive])]
    assert row[x] == pytest.approx(0.7, abs=1e-12)
    assert row[nearest_sensitive] > 0.299


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "abc", None])
def test_invalid_epsilon(bad):
    with pytest.raises(DPTextError):
        get_mechanism("santext", epsilon=bad)


def test_unknown_names():
    with pytest.raises(DPTextError, match="unknown mechanism"):
        get_mechanism("nope", epsilon=1)
    with pytest.raises(DPTextError, match="unknown space"):
        get_mechanism("santext", epsilon=1, space="nope")
    with pytest.raises(DPTextError, match="OOV policy"):
        get_mechanism("santext", epsilon=1, oov="explode")


def _narrow_table(space, units, width):
    """A neighbour table holding only ``width`` neighbours for ``units``: most mass lies beyond it."""
    from dptext.spaces.neighbours import finish, table_rows

    rows = np.asarray(units)
    d, o = table_rows(space, rows, width)
    dist = np.zeros((space.size, width), np.float32)
    order = np.zeros((space.size, width), o.dtype)
    dist[rows], order[rows] = d, o
    return finish(dist, order, space.size)


@pytest.mark.parametrize("name,eps,kw", [("rantext", 1.0, {}), ("rantext", 3.0, {}), ("rantext", 14.0, {}),
                                         ("rantext", 6.0, {"noise": "paper"}), ("santext", 3.0, {}),
                                         ("santext+", 3.0, {}), ("santext+", 12.0, {})])
@pytest.mark.parametrize("width", [2, 64])
def test_table_sampler_exact_beyond_the_table(name, eps, kw, width):
    """Envelope-and-rejection draws match transition() when the table covers little of V."""
    m = get_mechanism(name, epsilon=eps, seed=0, **kw)
    units = ["hospital", "the", "surgeon" if name != "rantext" else "happy"]
    ids = [m.space.lookup(u) for u in units]
    m.use_table(_narrow_table(m.space, ids, width))
    rng = np.random.default_rng(4321)
    for u, i in zip(units, ids):
        draws = m.sample(u, 20_000, rng=rng)
        p = chi2_pvalue(draws, m.transition(u))
        assert p > 1e-4, f"{name} eps={eps} {kw} width={width} unit={u}: p={p:.2e}"


@pytest.mark.parametrize("name", ["santext", "santext+"])
def test_santext_huge_epsilon_is_stable(name, recwarn):
    """At the largest accepted ε (10000: exp(ε·d/2) overflows float32 and float64) rows stay finite and a
    unit maps to its nearest member."""
    from dptext.mechanisms.spec import EPSILON_MAX

    m = get_mechanism(name, epsilon=EPSILON_MAX, seed=0)
    x = m.space.lookup("surgeon")  # sensitive under both
    row = m.transition("surgeon")
    assert np.isfinite(row).all() and row[x] == pytest.approx(1.0)
    assert (m.sample("surgeon", 1000) == x).all()
    out = m.perturb("the surgeon examined a patient").units
    assert out[1].output == "surgeon"
    if name == "santext+":  # "the" is not sensitive: kept, or its nearest sensitive unit
        d = m.space.exact_distances([m.space.lookup("the")])[0]
        nearest = np.flatnonzero(m.sensitive)[np.argmin(d[m.sensitive])]
        outs = m.sample("the", 2000, rng=np.random.default_rng(0))
        assert set(np.unique(outs)) == {m.space.lookup("the"), nearest}
    else:
        assert [u.output for u in out] == ["the", "surgeon", "examined", "a", "patient"]
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
