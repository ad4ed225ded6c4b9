"""Cape: bucketized EM closed form, sampling vs transition, lambda effects, kept units.

Runs the real device model (SmolLM2-135M through llama.cpp) on the real spaces.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.cape import bucket_law, default_device, rows_from_law

CONTEXT = "My doctor said the biopsy results from the hospital were normal, so we celebrated with dinner."


@pytest.fixture(scope="module")
def device():
    return default_device()


@pytest.fixture(scope="module")
def cape(device):
    return get_mechanism("cape", epsilon=8, seed=5, device=device)


def closed_form(u, eps, du, nb):
    """Independent scalar implementation of the bucket probabilities (docs/algorithms.md, "Cape")."""
    lo, hi = min(u), max(u)
    w = (hi - lo) / nb
    members = {}
    for t, val in enumerate(u):
        k = nb - 1 if w == 0 or val >= hi else int(math.floor((val - lo) / w))
        members.setdefault(min(k, nb - 1), []).append(t)
    score = {k: eps * np.mean([u[t] for t in ts]) / (2 * du) for k, ts in members.items()}
    z = sum(math.exp(s) for s in score.values())
    row = [0.0] * len(u)
    for k, ts in members.items():
        for t in ts:
            row[t] = math.exp(score[k]) / z / len(ts)
    return row, members


def test_bucket_probabilities_closed_form():
    u = np.array([[0.0, 0.05, 0.1, 0.42, 0.5, 0.51, 0.9, 1.0, 1.0, -0.3, 0.33, 0.34]])
    for eps, nb in ((1.0, 5), (4.0, 3), (10.0, 50), (0.5, 1)):
        b, counts, probs = bucket_law(u, eps, 1.5, nb)
        row = rows_from_law(b, counts, probs)[0]
        expect, members = closed_form(u[0].tolist(), eps, 1.5, nb)
        np.testing.assert_allclose(row, expect, rtol=1e-12)
        assert row.sum() == pytest.approx(1.0)
        assert (counts[0] > 0).sum() == len(members)  # empty buckets dropped
    # epsilon -> 0: every non-empty bucket equally likely; epsilon -> inf: the best bucket only
    b, counts, probs = bucket_law(u, 1e-12, 1.5, 5)
    nz = counts[0] > 0
    np.testing.assert_allclose(probs[0][nz], 1.0 / nz.sum())
    b, counts, probs = bucket_law(u, 1e6, 1.5, 5)
    row = rows_from_law(b, counts, probs)[0]
    top = b[0] == b[0].max()
    np.testing.assert_allclose(row[top], 1.0 / top.sum())  # uniform inside the best bucket
    assert row[~top].sum() == pytest.approx(0.0, abs=1e-12)
    # members of one bucket share one probability
    b, counts, probs = bucket_law(u, 2.0, 1.5, 4)
    row = rows_from_law(b, counts, probs)[0]
    for k in np.unique(b[0]):
        assert np.ptp(row[b[0] == k]) == 0


def test_sampling_matches_transition(cape):
    row = cape.transition("biopsy", context=CONTEXT)
    assert row.sum() == pytest.approx(1.0) and row.min() >= 0
    rng = np.random.default_rng(123)
    n = 20_000
    draws = cape.sample("biopsy", n, rng=rng, context=CONTEXT)
    assert chisquare_row(row, draws) > 1e-3


def test_lambdas_move_mass(cape):
    seg, pos, i = cape.locate("biopsy", CONTEXT)
    logits = cape.device.unit_logits(seg, np.asarray([pos]), cape.space)  # one device pass, reused
    d = cape.space.distances([i])[0]
    top_logit = np.argsort(-logits[0])[:100]
    near = np.argsort(d)[1:101]  # the 100 nearest other units

    def row(lambda_l, lambda_d):
        m = get_mechanism("cape", epsilon=10, lambda_l=lambda_l, lambda_d=lambda_d, device=cape.device)
        u = m.utility(logits, np.asarray([i]))
        return rows_from_law(*bucket_law(u, m.epsilon, m.sensitivity, m.n_buckets))[0]

    # raising lambda_L moves mass toward high-logit candidates
    mass = [row(ll, 1.0)[top_logit].sum() for ll in (0.1, 0.5, 1.0, 3.0)]
    assert all(a < b for a, b in zip(mass, mass[1:])), mass
    # raising lambda_D moves mass toward near units
    mass = [row(0.5, ld)[near].sum() for ld in (0.25, 1.0, 4.0)]
    assert all(a < b for a, b in zip(mass, mass[1:])), mass


def bound_by_enumeration(eps, nb, v):
    """The proven bound written out term by term (scalar loops), for comparison with the vectorised one."""
    best = -math.inf
    for m in range(min(nb, v)):
        tail = sum(math.exp(eps * i / (2 * nb)) for i in range(nb - m + 1, nb + 1))
        best = max(best, math.log(1 + tail) + math.log(v - m))
    return -math.log(1 + math.exp(-eps / 2)) + best


@pytest.mark.parametrize("v,eps,nb", [(60, 1.0, 50), (30, 2.0, 20), (10, 1.0, 5), (8, 4.0, 3)])
def test_bound_survives_brute_force_search_and_ln_v_does_not(v, eps, nb):
    from reference.search import search

    from dptext.mechanisms.cape_bounds import cape_bound

    bound = cape_bound(eps, nb, v)
    assert bound == pytest.approx(bound_by_enumeration(eps, nb, v), rel=1e-12)
    found = search(eps, nb, v, seed=1)
    assert found <= bound + 1e-9  # no violation
    assert found >= bound - 0.15  # and the bound is nearly attained: not loose
    if (v, eps, nb) in ((60, 1.0, 50), (30, 2.0, 20)):
        assert found > eps + math.log(v) + 0.3  # the former claim ε + ln|V| is violated


def test_bound_counter_example_of_the_issue():
    """|V| = 1000, ε = 1, N_b = 50: x far from everything but itself, x' with 48 units spread above itself."""
    from dptext.mechanisms.cape_bounds import cape_bound

    v, eps, nb = 1000, 1.0, 50
    ux = np.zeros(v)
    ux[0] = 1.0  # x itself at the top of the range, every other unit at normalised distance 1
    ux2 = np.zeros(v)
    ux2[1:49] = np.linspace(1 / 48, 1.0, 48)  # 48 units spread between x' and the far shell
    rows = rows_from_law(*bucket_law(np.stack([ux, ux2]), eps, 1.0, nb))
    lr = float(np.log(rows[0, 0] / rows[1, 0]))
    assert lr > eps + math.log(v) + 2 and lr <= cape_bound(eps, nb, v)


def test_bound_on_real_geometry_small_vocabulary():
    """Rows from real GloVe distances on 40-unit vocabularies and shared random logits stay under the bound."""
    from dptext.mechanisms.cape_bounds import cape_bound
    from dptext.spaces import get_space

    sp = get_space("glove-50d")
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(30):
        sub = rng.choice(sp.size, 40, replace=False)
        d = sp.distances(sub, sub).astype(np.float64)
        dt = d / d.max()
        lt = rng.beta(0.3, 0.3, size=40)
        u = 0.5 * lt[None, :] - 1.0 * dt  # row i: input sub[i]
        rows = rows_from_law(*bucket_law(u, 2.0, 1.5, 10))
        lr = np.log(rows)[:, None, :] - np.log(rows)[None, :, :]
        worst = max(worst, float(lr.max()))
    assert 0 < worst <= cape_bound(2.0, 10, 40)


def test_keeps_stopwords_and_reports_proven_unit_bounds(cape):
    res = cape.perturb(CONTEXT)
    assert res.text != CONTEXT
    for u in res.units:
        if u.original.lower() in ("my", "the", "from", "were", "so", "we", "with") or u.original in (",", "."):
            assert u.output == u.original and u.action == "kept"
    perturbed = [u for u in res.units if u.action == "perturbed" and u.reason == "vocab"]
    proven, thm = res.privacy["unit_epsilon_proven"], res.privacy["unit_epsilon_cape_thm41"]
    assert len(proven) == len(thm) == len(perturbed)
    bound = res.privacy["claim"]["bound"]
    assert bound == pytest.approx(bound_by_enumeration(cape.epsilon, cape.n_buckets, cape.space.size))
    assert all(p <= bound + 1e-9 for p in proven)
    # "biopsy" against 200 other inputs put in its place: every log-ratio, both directions, within its value
    seg, pos, i = cape.locate("biopsy", CONTEXT)
    logits = cape.device.unit_logits(seg, np.asarray([pos]), cape.space)
    others = np.random.default_rng(0).choice(cape.space.size, 200, replace=False)
    cand = np.concatenate([[i], others])
    u = cape.utility(np.repeat(logits, len(cand), axis=0), cand)
    b, counts, probs = bucket_law(u, cape.epsilon, cape.sensitivity, cape.n_buckets)
    logr = np.log(rows_from_law(b, counts, probs))
    k = [j for j, r in enumerate(perturbed) if r.original == "biopsy"][0]
    worst_pair = max(float((logr[0] - logr[1:]).max()), float((logr[1:] - logr[0]).max()))
    assert 0 < worst_pair <= proven[k] + 1e-9
    # and it is attained by explicit adversarial inputs (utility rows of range Δu), one per direction:
    # x's least likely output alone at the top of x''s range ...
    from dptext.mechanisms.cape_bounds import extreme_rows

    lo_t = int(np.argmin(logr[0]))
    up = np.zeros((1, cape.space.size))
    up[0, lo_t] = cape.sensitivity
    up_row = rows_from_law(*bucket_law(up, cape.epsilon, cape.sensitivity, cape.n_buckets))[0]
    # ... and x's most likely output at the bottom with most units, one unit under each top bucket edge
    hi_t = int(np.argmax(logr[0]))
    _, low, _ = extreme_rows(cape.epsilon, cape.n_buckets, cape.space.size, delta_u=cape.sensitivity)
    low[[0, hi_t]] = low[[hi_t, 0]]
    low_row = rows_from_law(*bucket_law(low[None, :], cape.epsilon, cape.sensitivity, cape.n_buckets))[0]
    attained = max(float(np.log(up_row[lo_t]) - logr[0, lo_t]), float(logr[0, hi_t] - np.log(low_row[hi_t])))
    assert attained == pytest.approx(proven[k], abs=1e-6)
    nz = counts[0][counts[0] > 0]
    assert thm[k] == pytest.approx(cape.epsilon + math.log(nz.max() / nz.min()))
    assert cape.settings()["clip"] > 0


def test_fast_sampler_matches_the_literal_reference_in_tweets(cape, device):
    from dptext.privacy.audit import audit_contexts
    from dptext.privacy.fidelity import compare

    text = audit_contexts(1)[0]
    seg = cape.segment(text)
    pos, idx = cape.vocab_positions(seg)
    units = list(dict.fromkeys(int(i) for i in idx))[:3]
    pvals = {}
    for eps in (2.0, 8.0):
        m = get_mechanism("cape", epsilon=eps, device=device, clip=cape.clip)
        res = compare(m, units, samples=2000, seed=3, context=text)
        pvals[eps] = [(r.unit, round(r.pvalue, 4)) for r in res]
        assert all(r.passed for r in res), [r.to_dict() for r in res]
    print(pvals)


def test_context_changes_the_row_and_errors(cape):
    a = cape.transition("results", context="The biopsy results were normal.")
    b = cape.transition("results", context="The election results were announced.")
    assert np.abs(a - b).sum() > 1e-3
    with pytest.raises(DPTextError):
        cape.transition("fox", context=CONTEXT)
    with pytest.raises(DPTextError):
        get_mechanism("cape", epsilon=1, n_buckets=0)


def test_cape_on_minilm_wordpiece(device):
    m = get_mechanism("cape", epsilon=6, space="minilm-wordpiece", device=device, seed=2)
    res = m.perturb("Unbelievably, the hospital results arrived today.")
    assert "##" not in res.text and res.text.endswith(".")
    row = m.transition("hospital", context="Unbelievably, the hospital results arrived today.")
    assert row.sum() == pytest.approx(1.0)


def test_device_windows_match_single_pass(device):
    from dptext.mechanisms._device import CausalLlamaDevice
    from dptext.spaces import get_space

    space = get_space("smollm2")
    seg = space.segment(CONTEXT + " " + CONTEXT)
    pos = np.arange(len(seg.pieces))
    full = device.unit_logits(seg, pos, space)
    small = CausalLlamaDevice(n_ctx=24, overlap=4).unit_logits(seg, pos, space)
    assert np.isfinite(small).all()
    early = pos[:15]  # inside the first window: same prefix, same logits
    np.testing.assert_allclose(small[early], full[early], atol=0.05)
    assert not np.allclose(small[-5:], full[-5:], atol=0.05)  # later windows see a shorter prefix


def test_cli_cape_commands(device):
    import json

    from typer.testing import CliRunner

    from dptext.cli import app

    runner = CliRunner()
    out = runner.invoke(app, ["perturb", "-m", "cape", "-e", "4", "--seed", "3", "--json", CONTEXT])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output[out.output.index("{"):])
    assert res["privacy"]["unit_epsilon_proven_max"] > 4 and len(res["units"]) > 10
    out = runner.invoke(app, ["transition", "biopsy", "-m", "cape", "-k", "3"])
    assert out.exit_code == 0 and len(out.output.strip().splitlines()) >= 3
    out = runner.invoke(app, ["context-transition", "biopsy", "-c", CONTEXT, "-p", "n_buckets=10", "-k", "2"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(app, ["cape-calibrate", "--json", "A short calibration sentence about the weather."])
    assert out.exit_code != 0 and "does not exist" in str(out.exception)  # a file path, not the text itself
    out = runner.invoke(app, ["context-transition", "fox", "-c", CONTEXT])
    assert out.exit_code != 0


def test_masked_lm_device_extension(tmp_path):
    """A real (tiny, randomly initialised) BERT masked LM plugged in as Cape's device on minilm-wordpiece."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from dptext.mechanisms._device import TransformersMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    BertForMaskedLM(cfg).eval().save_pretrained(tmp_path)
    dev = TransformersMaskedLM(str(tmp_path), max_len=16)
    m = get_mechanism("cape", epsilon=5, space="minilm-wordpiece", device=dev, clip=10.0, seed=4)
    text = "The biopsy results from the hospital were normal, so we celebrated with a long dinner downtown."
    seg, pos, i = m.locate("hospital", text)
    logits = dev.unit_logits(seg, np.asarray([pos]), m.space)
    # the device scores position pos with exactly that position masked (window of max_len around it)
    ids = m.space.token_ids[np.maximum(m.space.lookup_many([p.text for p in seg.pieces]), 0)]
    s = min(max(0, pos - 7), max(0, len(ids) - 14))
    inp = [101] + ids[s : s + 14].tolist() + [102]
    inp[pos - s + 1] = 103
    with torch.inference_mode():
        ref = dev.model(input_ids=torch.tensor([inp])).logits[0, pos - s + 1].numpy()
    np.testing.assert_allclose(logits[0], ref[m.space.token_ids], rtol=1e-5, atol=1e-5)
    row = m.transition("hospital", context=text)
    assert row.sum() == pytest.approx(1.0)
    res = m.perturb(text)
    assert res.privacy["claim"]["details"]["clip"] == 10.0 and "##" not in res.text


# ----- restricted LM head, joint sampler, column contract -------------------------------------------------
LONG = ("(Bees) My doctor said the biopsy results from the hospital were normal, so my wife and I celebrated "
        "with a long dinner downtown near the river.")


def chisquare_row(row, draws):
    """p-value of ``draws`` against ``row``: the 30 likeliest units alone, the rest pooled by level and parity."""
    n = len(draws)
    top = np.argsort(-row)[:30]
    bin_of = np.full(len(row), -1)
    bin_of[top] = np.arange(30)
    rest = bin_of < 0
    level = np.unique(row[rest], return_inverse=True)[1]
    bin_of[rest] = 30 + 2 * level + (np.flatnonzero(rest) % 2)
    expected = np.bincount(bin_of, weights=row * n)
    observed = np.bincount(bin_of[draws], minlength=len(expected))
    small = expected < 5
    exp_b = np.append(expected[~small], expected[small].sum())
    obs_b = np.append(observed[~small], observed[small].sum())
    keep = exp_b > 0
    assert obs_b[~keep].sum() == 0
    return stats.chisquare(obs_b[keep], exp_b[keep])[1]


def test_restricted_head_equals_llama_cpp_full_logits(cape):
    """Hidden states + one GEMM over the space's units (Q8_0 activation rounding) vs llama.cpp's own LM head."""
    from dptext.mechanisms._device import CausalLlamaDevice

    seg = cape.segment(LONG)
    pos, idx = cape.vocab_positions(seg)
    _, _, spaced = cape.device.align(seg, pos)
    assert spaced.any() and not spaced.all()  # both the leading-space and the bare candidate rows are used
    assert cape.device.lm_head(cape.space).shares_space  # distances ride in the same GEMM
    full = get_mechanism("cape", epsilon=8, device=CausalLlamaDevice(head="full"), clip=cape.clip)
    lr, lf = cape.device.unit_logits(seg, pos, cape.space), full.device.unit_logits(seg, pos, cape.space)
    assert np.abs(lf).max() > 10
    np.testing.assert_allclose(lr, lf, atol=1e-3, rtol=0)  # measured max |dL| 4e-5
    np.testing.assert_allclose(cape.utilities(seg, pos, idx), full.utilities(seg, pos, idx), atol=1e-5, rtol=0)


def test_joint_draws_at_several_positions_match_their_transitions(cape):
    """One ``_sample_in_context`` call with three positions, each drawn 6,000 times, interleaved."""
    seg = cape.segment(LONG)
    pos, idx = cape.vocab_positions(seg)
    pick = np.array([0, len(pos) // 2, len(pos) - 1])
    n = 6000
    order = np.tile(pick, n)
    draws = cape._sample_in_context(seg, pos[order], idx[order], np.random.default_rng(11))
    for k in pick:
        row = cape.transition(cape.space.units[idx[k]], context=LONG, position=int(pos[k]))
        p = chisquare_row(row, draws[order == k])
        assert p > 1e-3, (k, p)


def test_cape_column_override_equals_the_generic_default(cape):
    from dptext.mechanisms._contextual import ContextualMechanism

    seg = cape.segment(CONTEXT)
    pos, idx = cape.vocab_positions(seg)
    i, x0 = int(pos[2]), int(idx[2])
    cand = np.unique(np.r_[x0, np.random.default_rng(4).choice(np.flatnonzero(cape.input_mask), 12, replace=False)])
    y = int(cape.sample(cape.space.units[x0], 1, context=CONTEXT, position=i)[0])
    fast = cape.column_in_context(seg, i, cand, y, chunk=5)
    generic = ContextualMechanism.column_in_context(cape, seg, i, cand, y)
    assert fast.shape == (len(cand),) and generic.max() > 0
    # Both routes evaluate the same formulas, but BLAS rounds a row differently with the number of rows
    # in its GEMM: utilities differ in the last float32 bits, and a unit that sits on a bucket edge may
    # change bucket (and so |b| of y's bucket). Such moves are rare (0 to 2 of these 13 entries, depending on
    # the CPU's BLAS kernels); a wrong override moves nearly every entry. So at most a fifth may differ.
    off = ~np.isclose(fast, generic, rtol=1e-4, atol=1e-12)
    assert off.sum() <= len(cand) // 5, (off.sum(), len(cand))


def test_hidden_states_fail_closed(cape, monkeypatch):
    from dptext.llm import hidden

    hs = cape.device.hidden
    with pytest.raises(DPTextError):
        hs.run([1, 2, 3], [2, 1])  # rows must be sorted
    with pytest.raises(DPTextError):
        hs.run([1, 2, 3], [3])  # row outside the prompt
    monkeypatch.setattr(hidden, "NODE", b"no_such_tensor")
    with pytest.raises(DPTextError):  # the hidden-state tensor never seen: no values, not garbage
        hs.run([1, 2, 3], [2])
