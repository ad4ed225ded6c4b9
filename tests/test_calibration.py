"""RANTEXT's noise curve Z(ε): per-space calibration against InferDPT's targets, and its limits."""

import math

import numpy as np
import pytest

from dptext.mechanisms import get_mechanism
from dptext.mechanisms.calibration import PAPER_CURVE, NoiseCurve, describe_space, noise_calibration
from dptext.spaces import get_space


@pytest.mark.parametrize("space", ["cl100k-11k", "glove-50d"])
def test_calibrated_noise_hits_targets(space):
    """Pr(|C_r(happy)|/|V| <= 0.05) measured with the sampler's own d* draws, 2,000 per ε."""
    rng = np.random.default_rng(2024)
    # the targets and the 5 % ratio as the paper states them (not the module's constants, which are under test)
    for eps, target in ((2.0, 0.015), (6.0, 0.09), (10.0, 0.10), (14.0, 0.105)):
        m = get_mechanism("rantext", epsilon=eps, space=space, seed=0)
        sizes = m.candidate_set_sizes("happy", 2000, rng=rng)
        achieved = float(np.mean(sizes <= math.floor(0.05 * m.space.size)))
        assert abs(achieved - target) <= 0.015, f"{space} eps={eps}: {achieved:.4f} vs target {target}"


def test_paper_constants_miss_targets_outside_their_space():
    """The published curve makes C_r tiny in MiniLM space: Pr(|C_r|/|V| <= 0.05) is ~1, not 9 %."""
    m = get_mechanism("rantext", epsilon=6, space="cl100k-11k", noise="paper", seed=0)
    sizes = m.candidate_set_sizes("happy", 2000, rng=np.random.default_rng(1))
    assert np.mean(sizes <= 0.05 * m.space.size) > 0.9
    assert m.z == PAPER_CURVE.z(6.0)


def test_curve_below_fitted_range_and_shape():
    cal = noise_calibration(get_space("cl100k-11k"))
    curve = cal.curve
    assert curve.kind == "calibrated" and curve.b == 1.0 and curve.a > 0
    e0 = -curve.c / curve.b  # where b·ε + c = 0
    assert 0 < e0 < 2
    for eps in (0.1, 0.5, 0.9 * e0):
        assert curve.z(eps) == eps  # Z = ε where b·ε + c < 0
    for eps in np.linspace(e0 + 1e-6, 1.999, 5):
        assert curve.z(eps) >= eps
    zs = [curve.z(e) for e in (2, 6, 10, 14, 30)]
    assert all(b > a for a, b in zip(zs, zs[1:]))  # increasing on and beyond the fitted range
    # the stored solution per target is consistent with the fitted curve
    for (eps, _), z in zip(cal.targets, cal.solved_z):
        assert curve.z(eps) == pytest.approx(z, rel=0.02)


def test_hand_built_curve_rules():
    c = NoiseCurve("calibrated", a=0.5, b=1.0, c=-1.5, g=3.0, eps_min=2.0)
    assert c.z(1.0) == 1.0  # b·ε + c < 0
    assert c.z(1.6) == pytest.approx(max(1.6, 0.5 * math.log(0.1) + 3.0))
    assert c.z(6.0) == pytest.approx(0.5 * math.log(4.5) + 3.0)


@pytest.mark.parametrize("noise", ["calibrated", "paper"])
def test_epsilon_claim_does_not_depend_on_noise(noise):
    """The claim is ε whatever Z is; given d*, the row on C_r is the exponential mechanism with
    utility u = 1 − d/d* in [0, 1], so probabilities within C_r differ by at most exp(ε/2)."""
    eps = 6.0
    m = get_mechanism("rantext", epsilon=eps, noise=noise, seed=0)
    claim = m.privacy()
    assert (claim.epsilon, claim.bound, claim.kind) == (eps, float("inf"), "dp-within-set") and claim.details["noise"] == noise
    x = m.space.lookup("hospital")
    dstar = float(np.median(m.dstar_grid()))
    row = m.transition(x, dstar=dstar)
    support = row > 0
    d = m.space.exact_distances([x])[0]
    assert (support == (d < dstar)).all()
    spread = math.log(row[support].max() / row[support].min())
    assert spread <= eps / 2 + 1e-9
    if support.sum() > 100:  # a wide list reaches utilities near 0: the bound is nearly attained
        assert spread >= 0.3 * eps


def test_calibration_is_cached_and_reported(tmp_path):
    space = get_space("glove-50d")
    cal = noise_calibration(space)
    assert noise_calibration(space, compute=False) is not None  # cached on disk
    desc = describe_space(space)
    assert desc["calibration"]["a"] == pytest.approx(cal.curve.a)
    assert [t["epsilon"] for t in desc["calibration"]["targets"]] == [2.0, 6.0, 10.0, 14.0]
    m = get_mechanism("rantext", epsilon=3, space="glove-50d", seed=0)
    rep = m.perturb("the happy doctor").privacy
    assert rep["claim"]["details"]["noise"] == "calibrated"
    assert rep["claim"]["details"]["calibration"]["unit"] == "happy"
    assert rep["claim"]["details"]["Z"] == pytest.approx(cal.curve.z(3.0))


def test_calibrate_rantext_command():
    import json

    import typer
    from typer.testing import CliRunner

    from dptext.cli.calibrate import register

    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)  # a second command keeps typer's sub-command layout
    out = CliRunner().invoke(app, ["calibrate-rantext", "glove-50d", "--json"])
    assert out.exit_code == 0, out.output
    cal = json.loads(out.output)
    assert cal["space"] == "glove-50d" and cal["unit"] == "happy"
    for t in cal["targets"]:
        assert abs(t["achieved"] - t["target"]) < 0.01
    text = CliRunner().invoke(app, ["calibrate-rantext", "glove-50d"]).output
    assert "Z(eps) =" in text and "10.50%" in text
    bad = CliRunner().invoke(app, ["calibrate-rantext", "glove-50d", "--unit", "qqqzzzxxyy"])
    assert bad.exit_code != 0 and "not in the vocabulary" in str(bad.exception)


def test_chunked_dstar_draws_are_independent_and_follow_one_law():
    """d* draws cut into parallel chunks: no chunk repeats another, the pooled law equals one chunk's
    law (two-sample KS), and a seeded generator reproduces them."""
    from scipy.stats import ks_2samp

    from dptext.mechanisms.calibration import PARALLEL_ROWS, draw_norms

    scales = np.linspace(0.5, 2.0, 64)
    n = 8 * PARALLEL_ROWS
    pooled = draw_norms(scales, n, np.random.default_rng(11))
    chunks = pooled.reshape(8, PARALLEL_ROWS)
    assert len({c.tobytes() for c in chunks}) == 8
    assert np.abs(np.corrcoef(chunks)[np.triu_indices(8, 1)]).max() < 0.15
    single = np.concatenate([draw_norms(scales, PARALLEL_ROWS, np.random.default_rng(100 + i)) for i in range(8)])
    assert ks_2samp(pooled, single).pvalue > 1e-3
    # mean of ‖Y‖² is Σ 2·s_j² (E|Y_j|² = 2 s_j² for Exp(s_j)): a closed form, 5 standard errors
    sq = pooled**2
    assert abs(sq.mean() - 2 * (scales**2).sum()) < 5 * sq.std() / np.sqrt(n)
    np.testing.assert_array_equal(pooled, draw_norms(scales, n, np.random.default_rng(11)))
