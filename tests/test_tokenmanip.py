"""Token manipulation: lossy mappers, Stencil, punctuated Stencil, noise mapper; minilm-wordpiece."""

import json
import os

import numpy as np
import pytest

from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space

SPACES = ("smollm2", "minilm-wordpiece")
MAPPERS = ("2-random", "3-random", "high-freq", "low-freq")
TEXT = "The quick brown fox jumps over the lazy dog while seven wizards quietly brew potions."


@pytest.fixture(scope="module", params=SPACES)
def space(request):
    return get_space(request.param)


# ----- minilm-wordpiece ---------------------------------------------------------------------------
def test_minilm_space_table_and_specials():
    s = get_space("minilm-wordpiece")
    assert s.dim == 384 and s.size == 30522 - 999
    assert not any(u.startswith("[") and u.endswith("]") and len(u) > 2 for u in s.units)
    from safetensors.numpy import load_file

    from dptext.spaces.minilm import model_dir

    table = load_file(model_dir() + "/model.safetensors")["embeddings.word_embeddings.weight"]
    i = s.lookup("the")
    assert s.token_ids[i] == 1996 and np.array_equal(s.embeddings[i], table[1996])
    assert s.lookup("##ing") >= 0 and s.lookup("Café") == s.lookup("cafe") >= 0


def test_minilm_segmentation_round_trip_and_rendering():
    s = get_space("minilm-wordpiece")
    text = "Unbelievably, Café 2024 prices!  Wow\n\n😀 end "
    seg = s.segment(text)
    assert seg.join() == text
    units = [p.text for p in seg.pieces]
    assert "2024" in units and "##bel" in units and "😀" in units
    assert s.lookup("😀") < 0
    outs = ["##xx" if u.startswith("##") else u for u in units]
    assert "##" not in seg.join(outs)


# ----- lossy mappers --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MAPPERS)
def test_mapper_groups_partition_and_map_inside(space, name):
    m = get_mechanism(name, space=space.name, key=11)
    n = space.size
    members = np.concatenate(m.groups)
    assert np.array_equal(np.sort(members), np.arange(n))  # a partition: every unit exactly once
    assert all(len(g) >= 2 for g in m.groups)
    assert np.array_equal(m.group_of[m.mapping], m.group_of)  # every unit maps into its own group
    assert np.array_equal(m.mapping[m.representative], m.representative)
    k = {"2-random": 2, "3-random": 3}.get(name, 2)
    sizes = np.bincount(m.group_of)
    assert sizes.min() == k and sizes.max() <= k + 1
    y = int(m.mapping[123])
    assert 123 in m.preimage(y) and set(m.preimage(y).tolist()) == set(m.members(123).tolist())
    row = m.transition(space.units[123])
    assert row[y] == 1.0 and row.sum() == 1.0
    claim = m.privacy()
    assert claim.kind == "none" and claim.bound is None


@pytest.mark.parametrize("name", ("2-random", "3-random"))
def test_random_mapper_deterministic_given_key(name):
    a = get_mechanism(name, space="smollm2", key="secret")
    b = get_mechanism(name, space="smollm2", key="secret")
    c = get_mechanism(name, space="smollm2", key="other")
    assert np.array_equal(a.mapping, b.mapping)
    assert not np.array_equal(a.mapping, c.mapping)
    assert a.perturb(TEXT).text == b.perturb(TEXT).text
    # representatives are uniform members: about 1/k of units map to themselves
    k = a.group_size
    assert abs(np.mean(a.mapping == np.arange(len(a.mapping))) - 1 / k) < 0.02


def test_frequency_rule(space):
    hi = get_mechanism("high-freq", space=space.name)
    lo = get_mechanism("low-freq", space=space.name)
    n = space.size
    order = np.lexsort((np.arange(n), -space.freq))
    h = n // 2
    # rank r is paired with rank r + |V|/2
    assert np.array_equal(hi.group_of[order[:h]], hi.group_of[order[h : 2 * h]])
    assert np.array_equal(hi.group_of, lo.group_of)
    f = space.freq
    for g in range(0, hi.n_groups, 997):
        mem = hi.groups[g]
        assert f[hi.representative[g]] == f[mem].max()
        assert f[lo.representative[g]] == f[mem].min()
    # the frequent half maps to itself under high-freq, to its rare partner under low-freq
    assert np.all(hi.mapping[order[:h]] == order[:h])
    assert np.all(lo.mapping[order[: h - 1]] == order[h : 2 * h - 1])
    assert lo.mapping[order[h - 1]] == order[n - 1]  # odd |V|: the rarest unit closes the last group


def test_mapper_text_policies():
    m = get_mechanism("low-freq", space="smollm2", seed=1)
    res = m.perturb("Hello, world! 123")
    outs = {u.original: u for u in res.units}
    assert outs[","].output == "," and outs["!"].output == "!"
    assert outs["123"].reason == "digits"
    assert res.privacy["claim"]["kind"] == "none"


# ----- Stencil and punctuated Stencil ---------------------------------------------------------------
def _vocab_outputs(res, space):
    pairs = [(u.original, u.output) for u in res.units if u.action == "perturbed" and u.reason == "vocab"]
    assert pairs
    return [(space.lookup(a), space.lookup(b)) for a, b in pairs]


@pytest.mark.parametrize("name", ("stencil", "punctuated-stencil"))
def test_stencil_never_returns_original(space, name):
    m = get_mechanism(name, space=space.name)
    for x, y in _vocab_outputs(m.perturb(TEXT + " The dog, the fox and the dog again."), space):
        assert y >= 0 and y != x
    for unit in ("fox", "lazy"):
        row = m.transition(unit, context=TEXT)
        assert row[space.lookup(unit)] == 0 and row.sum() == pytest.approx(1.0)
        assert np.all(m.sample(unit, 50, context=TEXT) != space.lookup(unit))
    lone = m.transition("fox")
    assert lone[space.lookup("fox")] == 0 and lone.sum() == pytest.approx(1.0)
    assert m.privacy().kind == "none" and m.privacy().bound is None


@pytest.mark.parametrize("sigma", (0.0, 1e-3))
def test_stencil_sigma_to_zero_is_nearest_other_unit(space, sigma):
    m = get_mechanism("stencil", space=space.name, sigma=sigma)
    res = m.perturb(TEXT)
    pairs = _vocab_outputs(res, space)
    x = np.asarray([a for a, _ in pairs])
    nearest = space.nearest(space.embeddings[x], k=1, exclude=x)[:, 0]
    assert [b for _, b in pairs] == nearest.tolist()


def test_stencil_window_weights():
    from dptext.mechanisms.stencil import window_weights

    off = np.arange(-2, 3)
    exists = np.array([[True, True, True, True, True], [False, False, True, True, False]])
    f = window_weights(off, exists, 1.0, punctuated=False)
    g = np.exp(-off**2 / 2.0)
    np.testing.assert_allclose(f[0], g / g.sum())
    np.testing.assert_allclose(f[1], np.array([0, 0, g[2], g[3], 0]) / (g[2] + g[3]))  # renormalised
    p = window_weights(off, exists, 1.0, punctuated=True)
    assert p[0, 2] == 0 and p[1].tolist() == [0, 0, 0, 1, 0]
    z = window_weights(off, exists, 0.0, punctuated=True)  # sigma -> 0: closest existing offsets share
    np.testing.assert_allclose(z[0], [0, 0.5, 0, 0.5, 0])
    with pytest.raises(DPTextError):
        get_mechanism("stencil", space="smollm2", n=4)


def test_punctuated_stencil_uses_only_neighbours():
    space = get_space("smollm2")
    m = get_mechanism("punctuated-stencil", space=space.name, n=3, sigma=1.0)
    row = m.transition("brown", context="quick brown fox")
    v = space.embeddings[space.lookup("quick")] + space.embeddings[space.lookup("fox")]
    assert row.argmax() == space.nearest(v, k=1, exclude=[space.lookup("brown")])[0, 0]


# ----- noise mapper -----------------------------------------------------------------------------------
def test_noise_pruned_search_is_exact(space):
    m = get_mechanism("noise-mapper", epsilon=300.0, space=space.name)
    rng = np.random.default_rng(0)
    x = rng.integers(0, space.size, 200)
    e64 = space.embeddings.astype(np.float64)
    sq = (e64**2).sum(1)
    for scale in (0.2, 1.0, 3.0):  # mostly pruned ... mostly full search
        z = m.noise(len(x), rng) * scale
        q = (space.embeddings[x] + z).astype(np.float32)
        got = m._nearest(q, x, np.linalg.norm(z, axis=1))
        q64 = q.astype(np.float64)
        d2 = sq[None, :] - 2.0 * (q64 @ e64.T)  # brute force in float64 (|q|^2 is constant per row)
        d2[np.arange(len(x)), x] = np.inf
        rows = np.arange(len(x))
        best = d2.argmin(axis=1)
        assert np.mean(got == best) > 0.97  # the rest are (near-)ties: equal distances up to rounding
        np.testing.assert_allclose(d2[rows, got], d2[rows, best], rtol=1e-6, atol=1e-6)
        assert np.all(got != x)


def test_noise_radius_law_and_exclusion():
    m = get_mechanism("noise-mapper", epsilon=50.0, space="minilm-wordpiece", seed=3)
    z = m.noise(20_000, np.random.default_rng(1))
    r = np.linalg.norm(z, axis=1)
    n = m.space.dim
    assert r.mean() == pytest.approx(n / 50.0, rel=0.01)  # Gamma(N, 1/eta) mean N/eta
    assert r.var() == pytest.approx(n / 50.0**2, rel=0.05)
    keep = get_mechanism("noise-mapper", eta=1e5, space="minilm-wordpiece", exclude_original=False)
    x = np.arange(0, m.space.size, 97)
    assert np.array_equal(keep._sample(x, np.random.default_rng(2)), x)  # tiny noise, original allowed
    assert keep.privacy().kind == "metric-dp" and m.privacy().kind == "none"


def test_noise_nearest_neighbour_hit_rate_falls_with_eta(space):
    rng = np.random.default_rng(7)
    x = rng.choice(space.size, 300, replace=False)
    rates = []
    for eta in (3000.0, 300.0, 100.0, 30.0):
        m = get_mechanism("noise-mapper", eta=eta, space=space.name)
        y = m._sample(x, rng)
        guess = space.nearest(space.embeddings[y], k=1, exclude=y, metric="euclidean")[:, 0]
        rates.append(float(np.mean(guess == x)))
    assert all(a > b for a, b in zip(rates, rates[1:])), rates


def test_cli_runs_every_mechanism_of_the_area():
    """Through the CLI (JSON output): mappers emit group representatives, Stencil and the noise mapper never
    return the unit they replace."""
    from typer.testing import CliRunner

    from dptext.cli import app

    runner = CliRunner()
    space = get_space("minilm-wordpiece")
    for name in ("2-random", "high-freq", "stencil", "punctuated-stencil", "noise-mapper"):
        out = runner.invoke(app, ["perturb", "-m", name, "--space", "minilm-wordpiece", "--seed", "1", "--json", TEXT])
        assert out.exit_code == 0, out.output
        res = json.loads(out.output[out.output.index("{"):])
        pairs = [(space.lookup(u["original"]), space.lookup(u["output"])) for u in res["units"]
                 if u["action"] == "perturbed" and u["reason"] == "vocab"]
        assert len(pairs) >= 5 and all(y >= 0 for _, y in pairs) and "##" not in res["text"]
        if name in ("2-random", "high-freq"):
            m = get_mechanism(name, space=space.name, seed=1)
            assert all(m.mapping[y] == y and m.group_of[x] == m.group_of[y] for x, y in pairs)
        else:
            assert all(x != y for x, y in pairs)
    out = runner.invoke(app, ["transition", "fox", "-m", "stencil", "-k", "1"])
    assert out.exit_code == 0 and "1.000000\tfoxes" in out.output
    out = runner.invoke(app, ["context-transition", "fox", "-c", TEXT, "-m", "stencil", "-p", "sigma=0", "-k", "1"])
    assert out.exit_code == 0, out.output


# ----- dptext cape-calibrate FILE --save (real CLI in a subprocess) -----------------------------------------------
def _cli(args, cache_dir, stdin=None):
    import os
    import subprocess
    import sys

    env = {**os.environ, "DPTEXT_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture
def private_cache(tmp_path):
    """A cache of its own (so a saved B cannot leak into other tests) sharing the built spaces."""
    import os
    from pathlib import Path

    real = Path(os.environ["DPTEXT_CACHE_DIR"]) / "spaces"
    get_space("smollm2")  # built once in the shared cache
    (tmp_path / "spaces").symlink_to(real, target_is_directory=True)
    return tmp_path


def test_cape_calibrate_reads_a_file_and_refuses_small_saves(tmp_path, private_cache):
    from dptext.mechanisms.cape import default_device, saved_clip_path

    small = tmp_path / "small.txt"
    small.write_text("The committee met on Tuesday to review the budget.\n")
    out = _cli(["cape-calibrate", str(small), "--save"], private_cache)
    assert out.returncode == 2 and "refusing to save" in out.stderr and "at least 200" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    out = _cli(["cape-calibrate", str(tmp_path / "missing.txt"), "--save"], private_cache)
    assert out.returncode == 2 and "does not exist" in out.stderr
    out = _cli(["cape-calibrate", "--save"], private_cache)
    assert out.returncode == 2 and "--save needs a calibration FILE" in out.stderr
    big = tmp_path / "sample.txt"
    big.write_text(" ".join(["My doctor said the biopsy results were normal, so we walked home by the river."] * 20))
    out = _cli(["cape-calibrate", str(big), "--save", "--json"], private_cache)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["units"] >= 200 and rep["saved"] and rep["clip"] > 0  # the file's units, not its name's
    saved = saved_clip_path(default_device(), get_space("smollm2"))
    saved = private_cache / saved.relative_to(os.environ["DPTEXT_CACHE_DIR"])
    assert float(np.load(saved)) == pytest.approx(rep["clip"])
    piped = _cli(["cape-calibrate", "-", "--json"], private_cache, stdin=big.read_text())
    assert piped.returncode == 0 and json.loads(piped.stdout)["clip"] == pytest.approx(rep["clip"])
