"""Privacy audit: real mechanisms pass within their claimed scope; broken ones are flagged."""

import json
import math

import numpy as np
import pytest

from dptext.cli import main
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.base import PrivacyClaim
from dptext.mechanisms.custext import CusText
from dptext.mechanisms.rantext import RanText
from dptext.mechanisms.registry import MECHANISMS
from dptext.mechanisms.santext import SanText
from dptext.privacy._scopes import list_sharing, max_log_ratio
from dptext.privacy.audit import audit_mechanism, binned_counts, goodness_of_fit

EPS = 3.0


# ----- deliberately broken mechanisms -----------------------------------------------------------------------
class UniformSamplerCusText(CusText):
    """Claims CUSTEXT's rows but samples uniformly from the candidate list."""

    def _sample(self, idx, rng):
        sizes = (self.lists[idx] >= 0).sum(axis=1)
        j = (rng.random(len(idx)) * sizes).astype(np.int64)
        return self.lists[idx, j]


class DoubledEpsCusText(CusText):
    """Samples and reports rows at 2ε (consistently) but claims ε."""

    def _list_probs(self, ids):
        eps = self.epsilon
        self.epsilon = 2 * eps
        try:
            return super()._list_probs(ids)
        finally:
            self.epsilon = eps


class UnderclaimingSanText(SanText):
    """Real SANTEXT rows, but claims ε/4 metric DP (smaller than the truth)."""

    def privacy(self):
        c = super().privacy()
        return PrivacyClaim(c.mechanism, c.epsilon / 4, c.kind, c.bound / 4, c.scope, c.details)


class UnderclaimingRanText(RanText):
    def privacy(self):
        c = super().privacy()
        return PrivacyClaim(c.mechanism, c.epsilon, c.kind, c.epsilon / 3, c.scope, c.details)


def make(cls, **kw):
    return cls(epsilon=EPS, seed=0, **kw)


# ----- helpers ------------------------------------------------------------------------------------------------
def test_max_log_ratio_closed_form():
    p = np.array([0.5, 0.25, 0.25, 0.0])
    q = np.array([0.25, 0.25, 0.5, 0.0])
    assert max_log_ratio(p, q) == (pytest.approx(math.log(2)), 0)
    assert max_log_ratio(p, np.array([0.5, 0.5, 0.0, 0.0]))[0] == math.inf  # supports differ
    assert max_log_ratio(p, np.array([0.5, 0.5, 0.0, 0.0]), np.array([1, 1, 0, 0], bool))[0] == pytest.approx(
        math.log(2))


def test_binned_counts_hand_computed():
    expected = np.array([10, 3, 2.5, 1, 1, 1, 0.5, 0.5, 0, 0.5])
    counts = np.arange(10.0)
    obs, exp = binned_counts(counts, expected)
    # 10 alone; small cells by decreasing expectation: {3, 2.5} = 5.5 closes a bin; the tail
    # {1, 1, 1, 0.5, 0.5, 0.5} = 4.5 < 5 joins it; the zero-probability cell (count 8) is left out
    assert exp.tolist() == [10.0, 10.0] and obs.tolist() == [0.0, 1 + 2 + 3 + 4 + 5 + 6 + 7 + 9]


def test_goodness_of_fit_detects_a_wrong_sampler():
    good, bad = make(CusText), make(UniformSamplerCusText)
    rng = np.random.default_rng(1)
    assert goodness_of_fit(good, "house", 20000, rng).passed
    res = goodness_of_fit(bad, "house", 20000, rng)
    assert not res.passed and res.pvalue < 1e-6


# ----- real mechanisms pass ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["custext", "custext+", "santext", "santext+"])
def test_real_mechanisms_pass(name):
    mech = get_mechanism(name, epsilon=EPS, seed=0)
    res = audit_mechanism(mech, pairs=30, samples=20000, gof_units=2, seed=7)
    assert res.passed, res.summary()
    assert 0 < res.audited <= EPS + 1e-6 and res.claimed == EPS and res.pairs >= 30
    assert len(res.gof) == 2 and res.gof_passed
    if name.startswith("custext"):
        # in scope = pairs sharing a candidate list; across lists the supports differ
        assert (mech.lists[mech.space.lookup(res.worst["x"])] == mech.lists[mech.space.lookup(res.worst["x2"])]).all()
        assert res.unrestricted == math.inf and res.unrestricted_infinite_share > 0.9
    else:
        assert res.kind == "metric-dp" and res.unrestricted_bound == pytest.approx(EPS * mech.space.d_max)
        w = res.worst
        assert w["log_ratio"] <= EPS * w["distance"] + 1e-6


def test_santext_plus_keep_step_is_outside_the_metric_claim():
    mech = get_mechanism("santext+", epsilon=EPS, seed=0)
    frequent = int(np.flatnonzero(~mech.sensitive & mech.input_mask)[0])
    sensitive = int(mech.v_s[0])
    # a kept non-sensitive unit is an output that sensitive inputs never produce
    assert max_log_ratio(mech.transition(frequent), mech.transition(sensitive))[0] == math.inf


def test_rantext_actual_rows_at_fixed_dstar_pass():
    mech = get_mechanism("rantext", epsilon=EPS, seed=0, integration_points=500)
    res = audit_mechanism(mech, pairs=25, samples=20000, gof_units=2, mixture_pairs=3, seed=3)
    assert res.passed, res.summary()
    assert 0 < res.audited <= EPS and res.pairs == 25
    assert res.unrestricted == math.inf and not res.unrestricted_judged  # unbounded across lists, as claimed
    mix = res.extra["mixture"]
    assert mix["pairs"] == 3 and mix["max"] > res.audited  # the mixture over d* is not covered (reported)
    # the audited pair's rows are the mechanism's own rows at that d*, each over its own list: the raw
    # log-ratio minus the list-size term is the audited value, and the raw ratio itself may exceed ε
    w = res.worst
    assert w["log_ratio"] >= res.audited


def test_rantext_rows_at_fixed_dstar_within_the_list_size_term():
    """At one d*, x' inside C_r(x): the log-ratio of the actual rows never exceeds ε + |ln(|C_r(x)|/|C_r(x')|)|."""
    mech = get_mechanism("rantext", epsilon=EPS, seed=0)
    x = mech.index_of("house")
    dist = mech.space.distances([x])[0]
    dstar = float(np.sort(dist)[400])
    p = mech.transition(x, dstar=dstar)
    worst_raw, worst_excess = 0.0, -math.inf
    for x2 in np.flatnonzero((dist < dstar) & (np.arange(len(dist)) != x))[:60].tolist():
        q = mech.transition(x2, dstar=dstar)
        both = (p > 0) & (q > 0)
        lr = float(np.abs(np.log(p[both]) - np.log(q[both])).max())
        size = abs(math.log((p > 0).sum() / (q > 0).sum()))
        worst_raw = max(worst_raw, lr)
        worst_excess = max(worst_excess, lr - size - EPS)
    assert worst_excess <= 1e-9 and worst_raw > 1.0


def test_list_sharing_closed_form():
    lists = np.array([[0, 1, -1], [1, 0, -1], [2, 3, 4], [3, 2, 4], [4, 3, 2], [5, 6, -1], [6, 2, -1]])
    res = list_sharing(lists, np.arange(7))
    # 0,1 share; 2,3,4 share; 5's list holds 6 whose list is {6, 2}; 6's list holds 2 whose list differs
    assert res["violations"] == 2 and res["example"] == 5


# ----- broken mechanisms fail ---------------------------------------------------------------------------------------
def test_sampler_disagreeing_with_transition_fails():
    res = audit_mechanism(make(UniformSamplerCusText), pairs=10, samples=20000, gof_units=2, seed=1)
    assert res.claim_holds and not res.gof_passed and not res.passed


def test_true_epsilon_above_claim_fails():
    res = audit_mechanism(make(DoubledEpsCusText), pairs=60, samples=5000, gof_units=1, seed=1)
    assert res.gof_passed and not res.claim_holds and res.audited > EPS


def test_metric_claim_smaller_than_truth_fails():
    res = audit_mechanism(make(UnderclaimingSanText), pairs=20, samples=5000, gof_units=1, seed=2)
    assert not res.passed and res.audited > res.claimed == EPS / 4


def test_random_list_claim_smaller_than_truth_fails():
    mech = UnderclaimingRanText(epsilon=EPS, seed=0, integration_points=200)
    res = audit_mechanism(mech, pairs=25, samples=2000, gof_units=1, mixture_pairs=0, seed=3)
    assert not res.claim_holds and res.audited > EPS / 3


# ----- command line -----------------------------------------------------------------------------------------------------
@pytest.fixture
def broken_registered():
    MECHANISMS["doubled-eps-custext-test"] = DoubledEpsCusText
    DoubledEpsCusText.name = "doubled-eps-custext-test"
    yield "doubled-eps-custext-test"
    MECHANISMS.pop("doubled-eps-custext-test", None)


def test_audit_command(capsys, broken_registered):
    assert main(["audit", "-m", "custext", "-e", "3", "--pairs", "20", "--samples", "5000", "--seed", "1",
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["passed"] and rep["claimed"] == 3 and rep["unrestricted"] == "inf" and rep["claim"]["kind"]
    assert main(["audit", "-m", "santext", "-e", "2", "--pairs", "10", "--samples", "3000", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "per unit distance" in out and "result     PASS" in out
    assert main(["audit", "-m", broken_registered, "-e", "3", "--pairs", "60", "--samples", "3000",
                 "--seed", "1"]) == 1
    captured = capsys.readouterr()
    assert "result     FAIL" in captured.out and "audit failed" in captured.err
    assert main(["audit", "-m", "custext", "-e", "0"]) == 2
    assert main(["audit", "-m", "custext", "-e", "1", "--pairs", "0"]) == 2
    assert main(["audit", "-m", "nope", "-e", "1"]) == 2


def test_no_claim_mechanism_is_only_fit_checked(capsys):
    assert main(["audit", "-m", "2-random", "-e", "1", "--pairs", "5", "--samples", "500", "--seed", "1"]) == 0
    assert "no DP claim" in capsys.readouterr().out


def test_santext_large_epsilon_underflow_is_not_a_violation():
    mech = get_mechanism("santext", epsilon=200.0, seed=0)
    res = audit_mechanism(mech, pairs=10, samples=2000, gof_units=1, seed=4)
    assert res.claim_holds, res.summary()  # rows underflow to 0 far from x; the claim predicts that


def test_audit_command_cape_in_tweets_prints_the_proven_bound(capsys):
    from dptext.mechanisms.cape_bounds import cape_bound

    assert main(["audit", "-m", "cape", "-e", "3", "--pairs", "100", "--samples", "3000", "--gof-units", "1",
                 "--seed", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["passed"] and rep["unrestricted_judged"] and rep["claimed"] == pytest.approx(cape_bound(3.0, 50, 39002))
    ctx = rep["extra"]["cape_contexts"]
    assert ctx["contexts"] == 4 and ctx["pairs"] >= 400 and 0 < rep["audited"] <= rep["claimed"]
    assert main(["audit", "-m", "cape", "-e", "3", "--pairs", "40", "--samples", "2000", "--gof-units", "1",
                 "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert f"proven     bound {cape_bound(3.0, 50, 39002):.4g}" in out and "tweets" in out
    assert "result     PASS" in out


def test_audit_command_reference(capsys):
    assert main(["audit", "-m", "custext", "-e", "3", "--pairs", "10", "--samples", "3000", "--gof-units", "2",
                 "--seed", "1", "--reference", "--reference-samples", "1500"]) == 0
    out = capsys.readouterr().out
    assert "reference  2 units x 1500 draws" in out and "result     PASS" in out
    assert main(["audit", "-m", "2-random", "-e", "1", "--reference"]) == 2
    assert "no reference sampler" in capsys.readouterr().err


def test_document_level_mechanism_is_refused_with_one_line():
    """DP-Prompt rewrites whole documents (no space, no per-unit rows): the audit says so and exits 2."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "dptext.cli", "audit", "-m", "dp-prompt", "-e", "50"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "dptext: error: dp-prompt: a document-level mechanism; the per-unit audit does not apply"]
