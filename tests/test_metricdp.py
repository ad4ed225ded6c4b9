"""The embedding-noise metric-DP mechanisms: MultivariateCalibrated, Mahalanobis, Vickrey (SPEC 1.6).

Fast samplers against the literal references (two-sample chi-square, fixed seeds), broken
variants caught, the noise law against its closed form, Vickrey's choice rule, the claims'
d_max, the audit and the CLI.
"""

import json

import numpy as np
import pytest
from scipy import stats

from dptext.cli import main
from dptext.mechanisms import get_mechanism
from dptext.mechanisms._fastnn import nearest_units, order_pairs
from dptext.mechanisms._metricdp import diameter, nearest, nearest_two
from dptext.mechanisms.mahalanobis import Mahalanobis, normalised_covariance
from dptext.mechanisms.multivariate import MultivariateCalibrated
from dptext.mechanisms.vickrey import Vickrey, first_probability
from dptext.privacy import reference_metricdp as refm
from dptext.privacy.audit import audit_mechanism
from dptext.privacy.fidelity import compare

DRAWS = 1200
LEVEL = 1e-3
UNITS = ["house", "doctor"]
CASES = {"multivariate": {}, "mahalanobis": {"lam": 0.75}, "vickrey": {"t": 0.5}}


@pytest.mark.parametrize("name", list(CASES))
def test_fast_sampler_matches_the_literal_reference(name):
    mech = get_mechanism(name, epsilon=12.0, seed=0, **CASES[name])
    res = compare(mech, UNITS, samples=DRAWS, seed=5, alpha=LEVEL)
    assert all(r.passed for r in res), [r.to_dict() for r in res]
    assert all(r.distinct >= 5 for r in res)  # the rows spread: the test has power


# ----- broken variants are caught ------------------------------------------------------------------------------
class HalfRadius(MultivariateCalibrated):
    """Gamma(n, 1/(2ε)) radius: the noise of 2ε, claimed as ε."""

    def noise(self, n, rng):
        return super().noise(n, rng) / 2.0


class UnnormalisedCovariance(Mahalanobis):
    """Σ_λ from the raw covariance (trace not scaled to n)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        cov = np.cov(np.asarray(self.space.embeddings, dtype=np.float64), rowvar=False)
        w, u = np.linalg.eigh(self.lam * cov + (1 - self.lam) * np.eye(len(cov)))
        self.shape = (u * np.sqrt(w)) @ u.T


class SwappedVickrey(Vickrey):
    """Gives the second nearest unit the first one's probability."""

    def _decode(self, q, rng):
        i1, i2, d1, d2 = nearest_two(q, self.space)
        return np.where(rng.random(len(q)) < first_probability(d1, d2, self.t), i2, i1)


@pytest.mark.parametrize("cls,opts", [(HalfRadius, {}), (UnnormalisedCovariance, {"lam": 0.75}),
                                      (SwappedVickrey, {"t": 0.3})])
def test_broken_variants_are_caught_by_the_reference(cls, opts):
    mech = cls(epsilon=12.0, seed=0, **opts)
    res = compare(mech, UNITS[:1], samples=DRAWS, seed=5, alpha=LEVEL)
    assert max(r.pvalue for r in res) < 1e-6, [r.to_dict() for r in res]


# ----- the noise law ----------------------------------------------------------------------------------------------
def test_noise_radius_is_gamma_and_direction_uniform():
    mech = get_mechanism("multivariate", epsilon=4.0, seed=0)
    z = mech.noise(20000, np.random.default_rng(1))
    n = mech.space.dim
    r = np.linalg.norm(z, axis=1)
    assert stats.kstest(r, stats.gamma(a=n, scale=1 / 4.0).cdf).pvalue > LEVEL
    u = z / r[:, None]  # uniform on the sphere: E[u] = 0 and E[u uᵀ] = I/n
    assert np.abs(u.mean(axis=0)).max() < 5 * np.sqrt(1 / n / len(u))
    np.testing.assert_allclose(u.T @ u / len(u), np.eye(n) / n, atol=6 * np.sqrt(2 / n**2 / len(u)))


def test_mahalanobis_noise_has_covariance_proportional_to_sigma_lambda():
    lam, eps = 0.75, 5.0
    mech = get_mechanism("mahalanobis", epsilon=eps, lam=lam, seed=0)
    n = mech.space.dim
    sig = lam * normalised_covariance(mech.space.embeddings) + (1 - lam) * np.eye(n)
    assert np.trace(normalised_covariance(mech.space.embeddings)) == pytest.approx(n)
    z = mech.noise(40000, np.random.default_rng(2))
    # E[z zᵀ] = E[l²]/n · Σ_λ with E[l²] = n(n+1)/ε²
    emp = z.T @ z / len(z)
    want = (n + 1) / eps**2 * sig
    assert np.abs(emp - want).max() < 0.06 * np.abs(want).max()
    # and the Mahalanobis radius ‖Σ_λ^{-1/2} z‖ is Gamma(n, 1/ε)
    r = np.linalg.norm(z @ mech.inv_shape, axis=1)
    assert stats.kstest(r, stats.gamma(a=n, scale=1 / eps).cdf).pvalue > LEVEL


def test_vickrey_choice_rule():
    d1, d2 = np.array([1.0, 2.0]), np.array([3.0, 2.0])
    np.testing.assert_allclose(first_probability(d1, d2, 0.0), [1.0, 1.0])
    np.testing.assert_allclose(first_probability(d1, d2, 0.5), [0.75, 0.5])
    np.testing.assert_allclose(first_probability(d1, d2, 1.0), [0.0, 0.0])
    np.testing.assert_allclose(first_probability(d1, d2, 0.25), [0.75 * 3 / (0.25 + 0.75 * 3), 0.75])
    # the sampler at one fixed noisy point: Pr(w₁) is the formula (exact binomial test)
    mech = get_mechanism("vickrey", epsilon=10.0, t=0.4, seed=0)
    e = mech.space.embeddings
    q = mech.noisy_points(np.array([mech.index_of("king")]), np.random.default_rng(8))[0]  # a generic point
    i1, i2, a, b = nearest_two(q[None, :], mech.space)
    out = mech._decode(np.repeat(q[None, :], 4000, axis=0), np.random.default_rng(3))
    assert set(np.unique(out)) <= {int(i1[0]), int(i2[0])}
    p = float(first_probability(a, b, 0.4)[0])
    assert stats.binomtest(int((out == i1[0]).sum()), len(out), p).pvalue > LEVEL
    dist = np.linalg.norm(e.astype(np.float64) - q, axis=1)  # the two nearest by brute force
    assert [int(i1[0]), int(i2[0])] == np.argsort(dist)[:2].tolist()


def brute_force_two(table: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two nearest rows of ``table`` to each query, ordered by (float64 ``Σ(e − q)²``, index).

    A float64 scan of every row (``‖e‖² − 2⟨q, e⟩``, error ~1e-13 here) keeps the 6 best, which are then
    scored as ``Σ(e − q)²`` and sorted; exact unless 5 rows tie with the second within that error."""
    E = np.asarray(table, dtype=np.float64)
    sq = (E * E).sum(axis=1)
    idx, dist = np.empty((len(q), 2), dtype=np.int64), np.empty((len(q), 2))
    for s in range(0, len(q), 500):
        qs = q[s : s + 500]
        sc = sq[None, :] - 2.0 * (qs @ E.T)
        rows = np.arange(len(qs))
        top = []
        for _ in range(6):
            top.append(sc.argmin(axis=1))
            sc[rows, top[-1]] = np.inf
        top = np.stack(top, axis=1)
        d = ((E[top] - qs[:, None, :]) ** 2).sum(axis=2)
        order = np.lexsort((top, d), axis=1)[:, :2]
        idx[s : s + 500], dist[s : s + 500] = np.take_along_axis(top, order, 1), np.take_along_axis(d, order, 1)
    return idx, dist


def test_fast_search_is_the_brute_force_nearest_and_second_nearest():
    mech = get_mechanism("multivariate", epsilon=10.0, seed=0)
    rng = np.random.default_rng(6)
    idx = rng.integers(0, mech.space.size, 3000)
    q = mech.noisy_points(idx, np.random.default_rng(7))
    i1, i2, d1, d2 = nearest_two(q, mech.space)
    want, dist = brute_force_two(mech.space.embeddings, q)
    np.testing.assert_array_equal(np.stack([i1, i2], axis=1), want)
    np.testing.assert_array_equal(nearest(q, mech.space), want[:, 0])
    np.testing.assert_allclose(np.stack([d1, d2], axis=1) ** 2, dist, rtol=1e-12)


def test_fast_search_breaks_ties_by_index_as_the_brute_force():
    # duplicated rows (exact float64 ties) and rows one float32 step apart (closer than the float32 screen
    # can resolve): the screen alone cannot order either
    rng = np.random.default_rng(11)
    base = rng.standard_normal((300, 50)).astype(np.float32)
    nudged = base[200:260].copy()
    nudged[:, 0] = np.nextafter(nudged[:, 0], np.float32(np.inf))
    table = np.concatenate([base, base[:100], base[50:60], nudged])  # 0-99 twice, 50-59 three times
    table = table[rng.permutation(len(table))]
    near = rng.integers(0, 300, 2000)
    q = np.concatenate([base[near] + 0.05 * rng.standard_normal((2000, 50)), rng.standard_normal((1000, 50)) * 1.3])
    idx, d2 = nearest_units(q, table, ("test-ties", len(table)), k=2)
    first = nearest_units(q, table, ("test-ties", len(table)), k=1)[0][:, 0]
    want, dist = brute_force_two(table, q)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(first, want[:, 0])
    np.testing.assert_array_equal(d2, dist)
    assert (dist[:, 0] == dist[:, 1]).sum() > 300  # the ties really occur (and the lower index comes first)
    # the pair order on its own: equal distances put the lower index first, whatever order they come in
    c, d = order_pairs(np.array([[7, 3], [3, 7], [9, 2]]), np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 1.0]]))
    assert c.tolist() == [[3, 7], [3, 7], [2, 9]] and d.tolist() == [[1, 1], [1, 1], [1, 2]]


# ----- claims ----------------------------------------------------------------------------------------------------
def test_diameter_is_the_largest_pairwise_distance():
    pts = np.random.default_rng(4).standard_normal((700, 5)) * np.array([1, 2, 0.5, 3, 1])
    brute = max(np.linalg.norm(pts - p, axis=1).max() for p in pts)
    assert diameter(pts, step=64) == pytest.approx(brute, rel=1e-12)


def test_claims_are_metric_dp_with_their_dmax():
    eps = 3.0
    mv = get_mechanism("multivariate", epsilon=eps)
    c = mv.privacy()
    assert (c.kind, c.bound) == ("metric-dp", pytest.approx(eps * mv.space.d_max))
    vk = get_mechanism("vickrey", epsilon=eps)
    assert vk.privacy().bound == pytest.approx(c.bound)  # λ = 0: the same Euclidean metric
    mh = get_mechanism("mahalanobis", epsilon=eps, lam=0.5)
    cm = mh.privacy()
    pts = np.asarray(mh.space.embeddings, dtype=np.float64) @ mh.inv_shape
    # d_max is attained by a real pair and no sampled pair exceeds it
    sub = np.random.default_rng(5).choice(len(pts), 2000, replace=False)
    d_sub = max(np.linalg.norm(pts[sub] - p, axis=1).max() for p in pts[sub[:200]])
    assert cm.details["d_max"] >= d_sub
    assert cm.bound == pytest.approx(eps * cm.details["d_max"])
    # the inverse square root really inverts Σ_λ: d_λ(x,x')² = δᵀ Σ_λ⁻¹ δ
    sig = 0.5 * normalised_covariance(mh.space.embeddings) + 0.5 * np.eye(mh.space.dim)
    delta = pts[0] @ mh.shape - pts[1] @ mh.shape
    assert np.linalg.norm(pts[0] - pts[1]) ** 2 == pytest.approx(delta @ np.linalg.solve(sig, delta), rel=1e-9)
    # the reference builds Σ_λ^{1/2} on its own and gets the same matrix
    np.testing.assert_allclose(refm.regularised_sqrt(mh.space.embeddings, 0.5), mh.shape, atol=1e-8)


def test_bad_parameters_are_refused():
    from dptext.errors import DPTextError

    for name, opts in (("vickrey", {"t": 1.5}), ("mahalanobis", {"lam": -0.1})):
        with pytest.raises(DPTextError):
            get_mechanism(name, epsilon=1.0, **opts)


# ----- audit and CLI -----------------------------------------------------------------------------------------------
def test_audit_runs_the_reference_comparison():
    mech = get_mechanism("vickrey", epsilon=12.0, seed=0)
    res = audit_mechanism(mech, gof_units=1, reference_samples=700, seed=3)
    assert res.passed and len(res.fidelity) == 1 and res.kind == "metric-dp"
    bad = audit_mechanism(HalfRadius(epsilon=12.0, seed=0), gof_units=1, reference_samples=700, seed=3)
    assert not bad.passed


def test_cli_lists_perturbs_and_audits(capsys):
    assert main(["mechanisms"]) == 0
    listed = capsys.readouterr().out
    assert all(n in listed for n in CASES)
    for name in CASES:
        assert main(["perturb", "-m", name, "-e", "8", "--seed", "1", "--json", "The quick brown fox"]) == 0
        rep = json.loads(capsys.readouterr().out)
        p = rep["privacy"]  # every unit sampled: changed, or drawn as itself; none kept by a rule
        assert p["perturbed"] + p["self"] == 4 and p["kept"] == 0 and p["claim"]["kind"] == "metric-dp"
    assert main(["audit", "-m", "multivariate", "-e", "12", "--gof-units", "1", "--reference-samples", "600",
                 "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "reference  1 units x 600 draws" in out and "result     PASS" in out
    assert main(["perturb", "-m", "vickrey", "-e", "8", "-p", "t=2", "x"]) == 2
    err = capsys.readouterr().err
    assert "t=2" in err and "Traceback" not in err


def test_search_works_in_a_forked_child():
    # the parent's worker threads do not survive fork: the child must build its own pool, not queue work
    # that no thread runs (which would hang)
    import os
    import select

    mech = get_mechanism("multivariate", epsilon=10.0, seed=0)
    q = mech.noisy_points(np.arange(600), np.random.default_rng(3))  # several screening chunks
    want = nearest(q, mech.space)  # the parent's pool now exists
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (child)
        try:
            os.write(w, nearest(q, mech.space).astype(np.int64).tobytes())
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 60)
        assert ready, "the search in the forked child did not finish"
        got = b""
        while len(got) < 8 * len(q):
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            got += chunk
    finally:
        os.close(r)
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    np.testing.assert_array_equal(np.frombuffer(got, dtype=np.int64), want)
