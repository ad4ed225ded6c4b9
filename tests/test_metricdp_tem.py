"""TEM, the truncated exponential mechanism (SPEC 1.6): exact rows, the literal Gumbel race, claim, audit, CLI."""

import json
import math

import numpy as np
import pytest

from dptext.cli import main
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.tem import TEM
from dptext.privacy.audit import audit_mechanism
from dptext.privacy.fidelity import compare
from stats import chi2_pvalue

LEVEL = 1e-3
SETTINGS = [(1.0, 6.0), (2.0, 4.0)]  # ⊥ and a large γ-ball of comparable mass; ⊥ dominating


@pytest.mark.parametrize("eps,gamma", SETTINGS)
def test_sampler_matches_the_exact_row(eps, gamma):
    mech = get_mechanism("tem", epsilon=eps, gamma=gamma, seed=0)
    for unit in ("house", "doctor"):
        x = mech.index_of(unit)
        row = mech.transition(x)
        assert row.sum() == pytest.approx(1.0, abs=1e-12)
        draws = mech.sample(x, 20000, np.random.default_rng(4))
        assert chi2_pvalue(draws, row) > LEVEL


@pytest.mark.parametrize("eps,gamma", SETTINGS)
def test_fast_sampler_matches_the_literal_gumbel_race(eps, gamma):
    mech = get_mechanism("tem", epsilon=eps, gamma=gamma, seed=0)
    res = compare(mech, ["house", "doctor"], samples=1500, seed=5, alpha=LEVEL)
    assert all(r.passed for r in res) and all(r.distinct >= 5 for r in res), [r.to_dict() for r in res]


class BottomWithoutLog(TEM):
    """⊥ scored −γ (the 2·ln|V \\ L_x|/ε term dropped), as one outsider instead of all of them."""

    def _prepare(self, idx):
        super()._prepare(idx)
        for x, (ids, cdf, p_bot) in list(self._tables.items()):
            n_out = self.space.size - len(ids)
            if n_out:  # stored p = n_out / (in + n_out), in units of e^{−εγ/2}: recover the members' mass
                inside = n_out * (1 - p_bot) / p_bot
                self._tables[x] = (ids, cdf, 1.0 / (inside + 1.0))
        self._flat = None


def test_dropped_log_term_is_caught_by_the_reference():
    mech = BottomWithoutLog(epsilon=2.0, gamma=4.0, seed=0)
    res = compare(mech, ["house"], samples=1500, seed=5, alpha=LEVEL)
    assert res[0].pvalue < 1e-6


def test_rows_are_the_clamped_exponential_mechanism_and_the_claim_holds():
    eps, gamma = 4.0, 5.0
    mech = get_mechanism("tem", epsilon=eps, gamma=gamma)
    x, x2 = mech.index_of("house"), mech.index_of("home")
    p, q = mech.transition(x), mech.transition(x2)
    d = mech.space.distances([x])[0].astype(np.float64)
    outside = np.flatnonzero(d > gamma)
    assert np.ptp(p[outside]) <= 1e-15  # every outsider shares ⊥'s mass uniformly
    # ⊥'s mass: |V \ L_x|·e^{−εγ/2} / Z_x with Z_x over the members and ⊥ (the paper's Gumbel race)
    members = np.flatnonzero(d <= gamma)
    z = math.fsum(np.exp(-eps * d[members] / 2).tolist()) + len(outside) * math.exp(-eps * gamma / 2)
    assert p[outside].sum() == pytest.approx(len(outside) * math.exp(-eps * gamma / 2) / z, rel=1e-9)
    dxx = float(mech.space.distances([x], [x2])[0, 0])
    assert np.abs(np.log(p) - np.log(q)).max() <= eps * min(dxx, gamma) + 1e-9
    c = mech.privacy()
    assert (c.kind, c.bound) == ("metric-dp", pytest.approx(eps * min(gamma, mech.space.d_max)))
    dflt = get_mechanism("tem", epsilon=eps)
    assert dflt.gamma == pytest.approx(2 / eps * math.log(0.999 * mech.space.size / 0.001))


def test_audit_passes():
    mech = get_mechanism("tem", epsilon=6.0, gamma=5.0, seed=0)
    res = audit_mechanism(mech, pairs=20, samples=5000, gof_units=1, seed=1)
    assert res.passed and res.audited <= 6.0 + 1e-6 and res.unrestricted <= res.unrestricted_bound + 1e-6


def test_cli(capsys):
    assert main(["perturb", "-m", "tem", "-e", "6", "-p", "gamma=5", "--seed", "1", "--json",
                 "The quick brown fox"]) == 0
    rep = json.loads(capsys.readouterr().out)
    p = rep["privacy"]  # every unit sampled: changed, or drawn as itself; none kept by a rule
    assert p["perturbed"] + p["self"] == 4 and p["kept"] == 0 and p["claim"]["details"]["gamma"] == 5.0
    assert main(["audit", "-m", "tem", "-e", "6", "-p", "gamma=5", "--pairs", "10", "--samples", "3000",
                 "--gof-units", "1", "--seed", "1"]) == 0
    assert "result     PASS" in capsys.readouterr().out
    assert main(["perturb", "-m", "tem", "-e", "6", "-p", "beta=2", "x"]) == 2
    assert "beta" in capsys.readouterr().err


def test_playground_serves_the_family():
    """The playground's real server (loopback) perturbs with each new mechanism through the one core."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    import httpx
    from web_fixtures import serve_app

    from dptext.web.app import create_app

    with serve_app(create_app()) as base, httpx.Client(base_url=base, timeout=600) as client:
        names = {m["name"] for m in client.get("/api/mechanisms").json()["mechanisms"]}
        assert {"multivariate", "mahalanobis", "vickrey", "tem"} <= names
        for name in ("tem", "vickrey"):
            res = client.post("/api/perturb", json={"mechanism": name, "epsilon": 6, "text": "The quick brown fox",
                                                    "seed": 3})
            assert res.status_code == 200, res.text
            assert res.json()["privacy"]["claim"]["kind"] == "metric-dp"
