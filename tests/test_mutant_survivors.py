"""Tests for the mutants that survived the suite (issue 28, survivors 2-7; survivor 1 is test_cache_version.py).

Each test pins a property a real bug would break and that no other test checked: the clip in DP-Prompt's
draws, Cape's clip and bucket count in sampling, the default entity types, ``epsilon_spent`` as a maximum,
the Parquet writer across a flush, and both terms of Cape's proven per-unit bound.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from stats import chi2_pvalue

from dptext.mechanisms.cape_bounds import cape_floor_log, cape_unit_bound, cape_upper_log
from dptext.spaces.glove import GloveSpace

DOC = "My name is Maria Gonzalez and I live on Elm Street in Springfield. My blood tests showed type 2 diabetes."
CONTEXT = "My doctor said the biopsy results from the hospital were normal, so we celebrated with dinner."


# ----- 2. DP-Prompt: every draw is softmax(clip(L)/T) of the model's logits ----------------------------------
def test_dp_prompt_draws_use_clipped_logits(monkeypatch):
    """The draws' law, replayed against the model's own logits, on a clip range the logits leave at every step."""
    from dptext.mechanisms import dp_prompt

    lo, hi, temp, n = 1.0, 12.0, 1.5, 6
    mech = dp_prompt.DPPrompt(temperature=temp, clip_min=lo, clip_max=hi, max_tokens=n)
    laws, picks = [], []
    real_draw = dp_prompt.draw

    def recording_draw(p, rng):
        t = real_draw(p, rng)
        laws.append(np.array(p, dtype=np.float64))
        picks.append(t)
        return t

    monkeypatch.setattr(dp_prompt, "draw", recording_draw)
    mech.perturb(DOC, rng=np.random.default_rng(2))
    assert laws and len(laws) == len(picks) <= n
    llm, lock = mech._model()
    toks = llm.tokenize(mech.prompt(DOC).encode("utf-8"), add_bos=False, special=True)
    crossed = 0
    with lock:  # replay: the same prompt, then each drawn token, reading the model's raw logits
        llm.reset()
        llm.eval(toks)
        for p, t in zip(laws, picks):
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
            crossed += bool(logits.max() > hi or logits.min() < lo)
            z = np.minimum(np.maximum(logits, lo), hi) / temp
            want = np.exp(z - z.max())
            want /= want.sum()
            np.testing.assert_allclose(p, want, rtol=1e-6, atol=1e-12)
            llm.eval([t])
    assert crossed == len(laws)  # the clip changes every step's law


# ----- 3. Cape: logits clipped to ±B; the sampler uses n_buckets ---------------------------------------------
@pytest.fixture(scope="module")
def cape4():
    from dptext.mechanisms import get_mechanism
    from dptext.mechanisms.cape import default_device

    return get_mechanism("cape", epsilon=6, seed=5, device=default_device(), n_buckets=4, clip=3.0)


def test_cape_utility_clips_logits_beyond_the_bound(cape4):
    """``u = λ_L·(clip(L, −B, B) + B)/(2B) − λ_D·min(d/d_max, 1)``; every row's range within Δu = λ_L + λ_D."""
    space, b = cape4.space, cape4.clip
    rng = np.random.default_rng(0)
    idx = rng.choice(space.size, 3, replace=False)
    logits = rng.normal(0.0, 4 * b, (3, space.size)).astype(np.float32)  # far beyond ±B on both sides
    assert (logits > b).any() and (logits < -b).any()
    u = cape4.utility(logits.copy(), idx).astype(np.float64)
    e = np.asarray(space.embeddings, dtype=np.float64)
    d = np.sqrt(((e[idx][:, None, :] - e[None, :, :]) ** 2).sum(axis=2))
    want = (cape4.lambda_l * (np.clip(logits.astype(np.float64), -b, b) + b) / (2 * b)
            - cape4.lambda_d * np.minimum(d / space.d_max, 1.0))
    np.testing.assert_allclose(u, want, atol=2e-5)
    assert (u.max(axis=1) - u.min(axis=1)).max() <= cape4.lambda_l + cape4.lambda_d + 1e-6


def test_cape_sampler_follows_its_transition_at_a_non_default_bucket_count(cape4):
    seg = cape4.segment(CONTEXT)
    pos, idx = cape4.vocab_positions(seg)
    k = len(pos) // 2
    row = cape4.transition(cape4.space.units[idx[k]], context=CONTEXT, position=int(pos[k]))
    levels, level_of = np.unique(row, return_inverse=True)  # one level per non-empty bucket
    assert 2 <= len(levels) <= 4
    n = 4000
    draws = cape4._sample_in_context(seg, np.full(n, pos[k]), np.full(n, idx[k]), np.random.default_rng(7))
    mass = np.bincount(level_of, weights=row)  # probability of each level (bucket)
    assert chi2_pvalue(level_of[draws], mass) > 1e-3


# ----- 4. default entity types ------------------------------------------------------------------------------
SAMPLES = {  # one value per default type, each in a sentence of its own
    "EMAIL": "write to jo.doe@mail.example.org today",
    "URL": "see https://www.smith.com/a?b=1 later",
    "PHONE": "ring 555.201.3344 now",
    "CARD": "card 4111 1111 1111 1111 on file",
    "IBAN": "iban GB82 WEST 1234 5698 7654 32 here",
    "ID": "SSN 123-45-6789 on file",
    "IP": "host 192.168.1.10 down",
    "ADDRESS": "at 4200 Oak Ridge Parkway Suite 12, Lake Mary, FL 32746 today",
    "DATE": "born 03/04/1987 in",
    "PERSON": "yesterday Maria Gonzalez called",
    "HANDLE": "thanks @SusanKare for the icons",
}


@pytest.mark.parametrize("name,opts", [("entities", {}), ("tiered", {"entity_epsilon": 0.5})])
def test_each_default_type_is_detected_by_default(name, opts):
    from dptext.privacy.policy import get_policy

    pol = get_policy(name, **opts)
    assert set(SAMPLES) <= set(pol.describe()["types"])
    value = {"EMAIL": "jo.doe@mail.example.org", "URL": "https://www.smith.com/a?b=1", "PHONE": "555.201.3344",
             "CARD": "4111 1111 1111 1111", "IBAN": "GB82 WEST 1234 5698 7654 32", "ID": "123-45-6789",
             "IP": "192.168.1.10", "ADDRESS": "4200 Oak Ridge Parkway", "DATE": "03/04/1987", "PERSON": "Gonzalez",
             "HANDLE": "@SusanKare"}
    for label, text in SAMPLES.items():
        detected = [text[s.start:s.end] for s in pol.plan(text) if s.detector]
        assert any(value[label] in d for d in detected), (name, label, detected)


# ----- 5. epsilon_spent is the largest ε spent, not the last ----------------------------------------------
def test_core_epsilon_spent_is_the_largest_when_the_text_ends_in_an_entity():
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.pipeline import Sanitizer, Segment
    from dptext.privacy.policy import get_policy

    san = Sanitizer(MechanismSpec("rantext", epsilon=2.0), policy=get_policy("tiered", entity_epsilon=0.5))
    out = san.sanitize([Segment("the results were sent yesterday to Maria Gonzalez", True)],
                       rng=np.random.default_rng(1))
    spans = out.report["spans"]
    assert spans and spans[-1]["epsilon"] == 0.5 and spans[-1]["units"] > 0  # the last span: the entity
    assert out.report["units"]["perturbed"] > spans[-1]["units"]  # other words perturbed at ε = 2
    assert out.report["epsilon_spent"] == 2.0


def test_proxy_epsilon_spent_is_the_largest_when_the_last_batch_is_a_memo_replay(tmp_path):
    from dptext.privacy.memo import Memo
    from dptext.server import config_from_dict, hash_key
    from dptext.server.privacy import Perturber
    from dptext.server.request import parse_request
    from dptext.server.scheduler import CHUNK_CHARS, ungated

    cfg = config_from_dict({"upstream": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
                            "privacy": {"mechanism": "rantext", "epsilon": 1.5},
                            "auth": {"keys": [{"id": "a", "sha256": hash_key("k")}]},
                            "state_dir": str(tmp_path)})
    memo = Memo(tmp_path / "memo.sqlite", b"s" * 32)
    perturber = Perturber(cfg, memo=memo)
    words = "the patient reported a mild headache after the long walk in the park "
    text = (words * (CHUNK_CHARS // len(words) // 2 + 1)).strip()  # more than half a batch: one batch each
    assert CHUNK_CHARS // 2 < len(text) <= CHUNK_CHARS
    req = parse_request({"model": "x", "messages": [{"role": "user", "content": text},
                                                     {"role": "user", "content": text}]}, cfg)
    out = perturber.perturb(ungated, req, rng=np.random.default_rng(4))
    assert out.messages[0]["content"] == out.messages[1]["content"]  # the second is the first's replay
    assert out.report["memo_hits"] >= 1
    assert out.report["epsilon_spent"] == 1.5
    memo.close()


# ----- 6. Parquet writer across a flush ----------------------------------------------------------------------
def test_parquet_writer_writes_each_row_once_across_flushes(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dptext.batch.output import ParquetWriter

    monkeypatch.setattr(ParquetWriter, "FLUSH", 7)
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    w = ParquetWriter(tmp_path / "out.parquet", schema, "privacy_report")
    for i in range(23):  # three full flushes and a partial one at commit
        w.write({"id": i, "text": f"row {i}"}, {"mechanism": "m", "i": i})
    w.commit()
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("id").to_pylist() == list(range(23))
    assert [json.loads(r)["i"] for r in out.column("privacy_report").to_pylist()] == list(range(23))


# ----- 7. both terms of Cape's proven per-unit bound --------------------------------------------------------
def _sides(eps, nb, counts, probs):
    """The two terms, from each bucket's per-member probability ``Pr(k)/|b_k|`` (scalar loops)."""
    v = int(sum(counts))
    members = [p / c for c, p in zip(counts, probs) if c > 0]
    up, fl = cape_upper_log(eps, nb, v), cape_floor_log(eps, nb, v)
    return math.log(max(members)) + fl, up - math.log(min(members))


def test_cape_unit_bound_takes_whichever_side_is_larger():
    eps, nb = 4.0, 5
    # x concentrated on one member: the upper side (ln max Pr + F) dominates
    peaked = ([1, 0, 0, 0, 99], [0.9, 0, 0, 0, 0.1])
    # x spread over one big bucket and a tiny-probability one: the lower side (upper − ln min Pr) dominates
    spread = ([99, 0, 0, 0, 1], [1 - 1e-6, 0, 0, 0, 1e-6])
    a, b = _sides(eps, nb, *peaked), _sides(eps, nb, *spread)
    assert a[0] > a[1] and b[1] > b[0]  # each row exercises a different side
    got = cape_unit_bound(eps, nb, np.array([peaked[0], spread[0]]), np.array([peaked[1], spread[1]]))
    np.testing.assert_allclose(got, [max(a), max(b)], rtol=1e-12)


# ----- found by benchmarks/mutants.py: the noise mapper's noise law ------------------------------------------
def test_noise_mapper_noise_has_density_proportional_to_exp_minus_eta_norm():
    """``p(z) ∝ exp(−η‖z‖)`` in N dimensions: the radius has density ∝ r^(N−1)·e^(−ηr), a Gamma(N, 1/η) law
    (mean N/η), and the direction is uniform on the sphere (mean unit vector 0, |cos| to any axis ~ 1/√N)."""
    from scipy import stats as st

    from dptext.mechanisms import get_mechanism

    space = GloveSpace(size=300).load()
    eta, n, dim = 4.0, 20_000, space.dim
    z = get_mechanism("noise-mapper", eta=eta, space=space, seed=0).noise(n, np.random.default_rng(9))
    r = np.linalg.norm(z, axis=1)
    assert st.kstest(r, st.gamma(a=dim, scale=1.0 / eta).cdf).pvalue > 1e-3
    assert abs(r.mean() - dim / eta) < 4 * math.sqrt(dim) / eta / math.sqrt(n)
    u = z / r[:, None]
    assert np.abs(u.mean(axis=0)).max() < 5 / math.sqrt(n)  # no preferred direction


def test_noise_mapper_table_shortcut_gives_the_brute_force_nearest_unit():
    """The neighbour-table shortcut may answer only when no unit outside the table can be nearer (the triangle
    inequality with the noise radius). Noise of radius 0.3 and 0.6 times each unit's table edge, in random
    directions, is where a unit beyond the table can win: every answer must equal a brute-force search."""
    from dptext.mechanisms import get_mechanism

    space = GloveSpace(size=300).load()
    e = np.asarray(space.embeddings, dtype=np.float64)
    rng = np.random.default_rng(3)
    nm = get_mechanism("noise-mapper", eta=1.0, space=space, k=8, seed=0)
    x = rng.integers(0, space.size, 2000)
    edge = np.asarray(nm.table.rows(x)[1][:, -1], dtype=np.float64)
    u = rng.standard_normal((len(x), space.dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    rows = np.arange(len(x))
    for frac in (0.3, 0.6):
        z = u * (frac * edge)[:, None]
        q = (e[x] + z).astype(np.float32)
        got = nm._nearest(q, x, np.linalg.norm(z, axis=1))
        q64 = q.astype(np.float64)
        d = np.sqrt(np.maximum((q64**2).sum(1)[:, None] - 2 * q64 @ e.T + (e**2).sum(1)[None, :], 0.0))
        d[rows, x] = np.inf  # the original unit is excluded
        np.testing.assert_allclose(d[rows, got], d.min(axis=1), rtol=1e-5, atol=1e-5)


# ----- found by benchmarks/mutants.py: the memo is keyed by the settings ---------------------------------------
def test_memo_never_replays_a_text_perturbed_under_other_settings(tmp_path):
    """A replay is free only because it is the same release: the same text perturbed at another ε (or by
    another mechanism) must be perturbed afresh and charged, not replayed from the memo."""
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.pipeline import Sanitizer, Segment
    from dptext.privacy.memo import Memo

    memo = Memo(tmp_path / "memo.sqlite", b"m" * 32)
    text = [Segment("the patient reported a mild headache after the long walk", True)]
    weak = Sanitizer(MechanismSpec("rantext", epsilon=1.0), memo=memo)
    strong = Sanitizer(MechanismSpec("rantext", epsilon=8.0), memo=memo)
    first = weak.sanitize(text, scope="alice", rng=np.random.default_rng(1))
    assert first.report["memo_hits"] == 0 and first.report["epsilon_spent"] == 1.0
    other = strong.sanitize(text, scope="alice", rng=np.random.default_rng(2))
    assert other.report["memo_hits"] == 0 and other.report["epsilon_spent"] == 8.0
    again = weak.sanitize(text, scope="alice", rng=np.random.default_rng(3))
    assert again.report["memo_hits"] == 1 and again.report["epsilon_spent"] == 0.0
    assert again.texts == first.texts
    memo.close()


# ----- found by benchmarks/mutants.py: spans that do not tile the text fail closed ----------------------------
@pytest.mark.parametrize("spans", [[(0, 10), (14, None)], [(0, 14), (10, None)], [(0, 20)]],
                         ids=["gap", "overlap", "short"])
def test_policy_spans_that_do_not_tile_the_text_fail_closed(spans):
    """A policy whose spans leave a gap, overlap, or stop short would send those characters as they are:
    the Sanitizer must refuse instead (PrivacyError, no text returned)."""
    from dptext.errors import PrivacyError
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.pipeline import Sanitizer, Segment
    from dptext.privacy.policy import Span

    text = "Margaret Thompson lives in Leeds and works at the hospital"

    class Broken:
        def plan(self, t):
            return [Span(a, len(t) if b is None else b, True) for a, b in spans]

        def describe(self):
            return {"name": "broken"}

    san = Sanitizer(MechanismSpec("rantext", epsilon=2.0), policy=Broken())
    with pytest.raises(PrivacyError):
        san.sanitize([Segment(text, True)], rng=np.random.default_rng(0))


def test_cape_thm41_reads_only_non_empty_buckets():
    """The paper's per-unit statement ε + ln(max|b_k| / min|b_k|) is over the input's non-empty buckets."""
    from dptext.mechanisms.cape_bounds import cape_thm41

    counts = np.array([[5, 0, 3, 0, 12], [7, 7, 7, 7, 7], [0, 0, 40, 0, 0]])
    np.testing.assert_allclose(cape_thm41(2.5, counts), [2.5 + math.log(12 / 3), 2.5, 2.5], rtol=1e-12)


# ----- found by benchmarks/mutants.py: the audit judges the unrestricted side too -------------------------------
def test_audit_fails_when_only_the_unrestricted_side_exceeds_its_bound():
    """Cape's audit compares the in-scope loss with the claim and, where judged, the loss over all pairs with
    the proven bound: an excess on that side alone is a failed claim; unjudged, it is only reported."""
    from dptext.privacy.audit import AuditResult

    def result(unrestricted, judged):
        return AuditResult(mechanism="m", epsilon=2.0, space="s", claim={}, kind="dp-within-set", scope_rule="r",
                           audited=1.9, claimed=2.0, tolerance=1e-9, pairs=10, worst={}, unrestricted=unrestricted,
                           unrestricted_pairs=10, unrestricted_infinite_share=0.0, unrestricted_bound=5.0,
                           unrestricted_judged=judged, gof=[], gof_alpha=1e-3)

    assert result(4.0, True).claim_holds and result(4.0, True).passed
    assert not result(5.5, True).claim_holds and not result(5.5, True).passed
    assert result(5.5, False).claim_holds  # not judged: reported only
