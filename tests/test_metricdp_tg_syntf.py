"""TruncatedGumbel and SynTF (SPEC 1.6): fast samplers against the literal references, SynTF's exact rows
and ε bound, the truncated noise law, the claims, the audit and the CLI."""

import json
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import lambertw

from dptext.cli import main
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.syntf import SynTF
from dptext.mechanisms.truncated_gumbel import TruncatedGumbel, calibrated_scale, lambert_w0, truncated_gumbel
from dptext.privacy import reference_metricdp as refm
from dptext.privacy.audit import audit_mechanism
from dptext.privacy.fidelity import compare
from stats import chi2_pvalue

LEVEL = 1e-3
DRAWS = 1500


# ----- TruncatedGumbel --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("opts", [{}, {"b": 1.0}])  # the calibrated scale (≈ 7.8), and a small one
def test_truncated_gumbel_matches_the_literal_reference(opts):
    mech = get_mechanism("truncated-gumbel", epsilon=10.0, seed=0, **opts)
    res = compare(mech, ["house", "doctor"], samples=DRAWS, seed=5, alpha=LEVEL)
    assert all(r.passed for r in res) and all(r.distinct >= 5 for r in res), [r.to_dict() for r in res]


class OneSidedNoise(TruncatedGumbel):
    """Noise truncated to [0, Δmax] instead of [−Δmax, Δmax]."""

    def _noise(self, shape, rng):
        return np.clip(truncated_gumbel(shape, self.b, 2 * self.d_max, rng), 0.0, self.d_max)


class Squared:
    """Squares of a table's entries, computed on access (no squared copy of the whole table)."""

    def __init__(self, a):
        self.a, self.shape = a, a.shape

    def __getitem__(self, key):
        return np.asarray(self.a[key], dtype=np.float64) ** 2


class SquaredDistances(TruncatedGumbel):
    """Noise added to squared distances (as the peer's faiss search returns them)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        t = self.table
        self.table = type(t)(Squared(t.dist), t.order, t.near, t.edge)


@pytest.mark.parametrize("cls,b", [(OneSidedNoise, 1.0), (SquaredDistances, None)])
def test_truncated_gumbel_broken_variants_are_caught(cls, b):
    mech = cls(epsilon=10.0, b=b, seed=0)
    res = compare(mech, ["house"], samples=DRAWS, seed=5, alpha=LEVEL)
    assert res[0].pvalue < 1e-6, res[0].to_dict()


def test_truncated_noise_law_and_calibration():
    b, limit = 2.0, 1.5
    g = truncated_gumbel(40000, b, limit, np.random.default_rng(2))
    assert np.abs(g).max() <= limit
    lo, hi = stats.gumbel_r.cdf(-limit, scale=b), stats.gumbel_r.cdf(limit, scale=b)
    assert stats.kstest(g, lambda t: (stats.gumbel_r.cdf(t, scale=b) - lo) / (hi - lo)).pvalue > LEVEL
    # the calibration at a > 0: b = 2Δmax / min(W(2aΔmax), ln(aΔmin)), a = (ε − 2(1 + ln n)/Δmin)/3
    eps, n, dmin, dmax = 100.0, 1000, 1.0, 4.0
    a = (eps - 2 * (1 + math.log(n)) / dmin) / 3
    w = float(np.real(lambertw(2 * a * dmax)))
    assert w * math.exp(w) == pytest.approx(2 * a * dmax)
    assert calibrated_scale(eps, n, dmin, dmax) == pytest.approx(2 * dmax / min(w, math.log(a * dmin)))


@pytest.mark.parametrize("z", [-1e4, -200.0, -5.0, -1.0, -0.5, -0.37, -1 / math.e + 1e-9, -0.2, -1e-3, 0.5, 1.0,
                               3.0, 416.0, 1e6])
def test_lambert_w_principal_branch_matches_scipy(z):
    assert lambert_w0(z) == pytest.approx(complex(lambertw(z)), rel=1e-9, abs=1e-12)


def test_truncated_gumbel_claim_is_the_papers_statement_with_an_unbounded_proven_case():
    mech = get_mechanism("truncated-gumbel", epsilon=10.0, seed=0)
    c = mech.privacy()
    assert c.kind == "metric-dp" and math.isinf(c.bound) and "paper" in c.scope
    # the proven case: the unit farthest from x is never a candidate (k ≤ |V| − 1 and x takes a slot)
    x = mech.index_of("house")
    far = int(mech.space.exact_distances([x])[0].argmax())
    draws = mech._sample(np.full(200000, x), np.random.default_rng(0))
    assert far not in set(draws.tolist()) and mech.d_min > 0 and mech.d_max == mech.space.d_max


# ----- SynTF ------------------------------------------------------------------------------------------------------
def test_syntf_rows_are_the_exponential_mechanism_and_the_sampler_fits():
    eps = 8.0
    mech = get_mechanism("syntf", epsilon=eps, seed=0)
    x = mech.index_of("house")
    u = refm.syntf_utilities(mech.space, __import__("dptext.mechanisms.syntf").mechanisms.syntf.corpus_texts(
        "tweets", "shadow"), x)
    ys = np.array(sorted(u))
    w = np.exp([eps * u[y] / 2 for y in ys.tolist()])
    row = mech.transition(x)
    assert np.flatnonzero(row).tolist() == ys.tolist()  # support: the units seen in the corpus
    assert np.allclose(row[ys], w / math.fsum(w.tolist()), rtol=1e-9, atol=0)
    draws = mech.sample(x, 30000, np.random.default_rng(4))
    assert row[draws].min() > 0 and chi2_pvalue(draws, row) > LEVEL


def test_syntf_matches_the_literal_reference_and_a_broken_one_is_caught():
    mech = get_mechanism("syntf", epsilon=12.0, seed=0)
    res = compare(mech, ["house", "music"], samples=DRAWS, seed=5, alpha=LEVEL)
    assert all(r.passed for r in res), [r.to_dict() for r in res]

    class FullEpsilon(SynTF):  # exp(ε·u) instead of exp(ε·u/2)
        def _prepare(self, idx):
            eps = self.epsilon
            self.epsilon = 2 * eps
            try:
                super()._prepare(idx)
            finally:
                self.epsilon = eps

    bad = FullEpsilon(epsilon=12.0, seed=0)
    assert compare(bad, ["house"], samples=DRAWS, seed=5, alpha=LEVEL)[0].pvalue < 1e-6


def test_syntf_claim_bound_holds_over_all_pairs():
    eps = 6.0
    mech = get_mechanism("syntf", epsilon=eps)
    ids = [mech.index_of(w) for w in ("house", "home", "music", "good", "the")] + [mech.space.size - 1]
    rows = mech.transition_rows(ids)
    sup = mech.seen
    lr = np.abs(np.log(rows[:, None, sup]) - np.log(rows[None, :, sup])).max()
    c = mech.privacy()
    assert (c.kind, c.bound, c.details["set"]) == ("dp-within-set", eps, "all of V")
    assert 0.5 * eps < lr <= eps + 1e-9  # within the bound, and not trivially far below it
    assert not rows[:, ~sup].any()


def test_syntf_audit_passes():
    mech = get_mechanism("syntf", epsilon=6.0, seed=0)
    res = audit_mechanism(mech, pairs=15, samples=5000, gof_units=1, seed=1)
    assert res.passed and res.audited <= 6.0 + 1e-6 and res.unrestricted <= 6.0 + 1e-6


# ----- through the one core -----------------------------------------------------------------------------------------
def test_cli_and_dp_only(capsys):
    for name in ("truncated-gumbel", "syntf"):
        assert main(["perturb", "-m", name, "-e", "10", "--seed", "1", "--json", "The quick brown fox"]) == 0
        p = json.loads(capsys.readouterr().out)["privacy"]
        assert p["perturbed"] + p["self"] == 4 and p["kept"] == 0
        res = get_mechanism(name, epsilon=10, seed=2).perturb("Hello , world", dp_only=True)
        assert res.counts()["kept"] == 0  # a detected span: punctuation is drawn too
    assert main(["audit", "-m", "syntf", "-e", "6", "--pairs", "10", "--samples", "3000", "--gof-units", "1",
                 "--seed", "1", "--reference", "--reference-samples", "1000"]) == 0
    out = capsys.readouterr().out
    assert "result     PASS" in out and "reference  1 units" in out
    from dptext.privacy.fidelity import reference_units

    mech = get_mechanism("syntf", epsilon=6)
    assert mech.seen[reference_units(mech, 20, np.random.default_rng(0))].all()  # units with a non-uniform row
    assert main(["audit", "-m", "truncated-gumbel", "-e", "10", "-p", "b=1", "--gof-units", "1", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "result     PASS" in out and "the paper's statement, not proven (proven bound inf)" in out
    assert main(["perturb", "-m", "syntf", "-e", "6", "-p", "corpus=nope", "x"]) == 2
    assert "corpus" in capsys.readouterr().err
    assert main(["perturb", "-m", "truncated-gumbel", "-e", "6", "-p", "b=-1", "x"]) == 2
    assert "b=" in capsys.readouterr().err
