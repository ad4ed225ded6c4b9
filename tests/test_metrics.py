"""Metrics against hand-computed values on tiny inputs, and model-backed metrics on real models."""

import math

import numpy as np
import pytest

from dptext.mechanisms.base import PerturbResult
from dptext.metrics import (
    diversity,
    effective_mapping_set_size,
    lcs_length,
    mapping_set_sizes,
    mean_embedding_distance,
    ngram_leakage,
    retention_ratio,
    rouge_l,
    synonym_proportion,
    units,
)
from dptext.text import Piece


def lcs_dp(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            t[i + 1][j + 1] = t[i][j] + 1 if a[i] == b[j] else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


# ----- text metrics -------------------------------------------------------------------------------------
def test_units_normalise_case_and_split_marks():
    assert units("The cat, THE dog.") == ["the", "cat", ",", "the", "dog", "."]
    assert units([" The", "cat "]) == ["the", "cat"]


def test_diversity_hand_computed():
    # a b a b a: 2-grams ab ba ab ba (2 unique / 4), 3-grams aba bab aba (2/3), 4-grams abab baba (2/2)
    assert diversity("a b a b a") == pytest.approx(0.5 * (2 / 3) * 1.0)
    assert diversity("one two three four five") == 1.0
    assert diversity("x x x x x x") == pytest.approx((1 / 5) * (1 / 4) * (1 / 3))
    assert diversity("too short") == 0.0  # no 4-grams


def test_lcs_bit_parallel_matches_dynamic_programming():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.integers(0, 4, rng.integers(0, 90)).tolist()
        b = rng.integers(0, 4, rng.integers(0, 90)).tolist()
        assert lcs_length(a, b) == lcs_dp(a, b)


def test_rouge_l_hand_computed():
    # ref: the cat sat on the mat (6); cand: the cat lay on a mat (6); LCS the cat on mat = 4
    r = rouge_l("the cat sat on the mat", "the cat lay on a mat")
    assert r["precision"] == pytest.approx(4 / 6) and r["recall"] == pytest.approx(4 / 6)
    assert r["f1"] == pytest.approx(4 / 6)
    # ref 4 units, cand 2 units, LCS 2: P = 1, R = 1/2, F1 = 2/3
    assert rouge_l("a b c d", "b d")["f1"] == pytest.approx(2 / 3)
    assert rouge_l("Same Text", "same text")["f1"] == 1.0
    assert rouge_l("a b", "c d")["f1"] == 0.0 and rouge_l("", "a")["f1"] == 0.0


def test_retention_ratio_hand_computed():
    pairs = [("The", "the"), ("cat", "dog"), ("sat", None), ("on", "on")]
    assert retention_ratio(pairs) == pytest.approx(2 / 4)
    pieces = [Piece("", "The"), Piece(" ", "cat"), Piece("", ".")]
    res = PerturbResult("A cat.", pieces, ["A", "cat", "."], ["perturbed", "perturbed", "kept"],
                        ["vocab", "vocab", "punctuation"])
    assert retention_ratio(res) == pytest.approx(1 / 2)
    assert retention_ratio(res, include_punctuation=True) == pytest.approx(2 / 3)
    assert math.isnan(retention_ratio([]))


def test_ngram_leakage_hand_computed():
    doc = "the red fox jumps."
    gen = "A red fox sleeps; the fox jumps"
    # doc units (punctuation removed): the red fox jumps
    # 1-grams {the, red, fox, jumps} all in gen -> 4/4
    # 2-grams {the red, red fox, fox jumps}: red fox, fox jumps in gen -> 2/3
    # 3-grams {the red fox, red fox jumps}: none -> 0/2
    leak = ngram_leakage(doc, gen)
    assert leak == {1: 1.0, 2: pytest.approx(2 / 3), 3: 0.0}
    assert ngram_leakage(doc, gen, skip_stopwords=True)[1] == 1.0
    pooled = ngram_leakage([doc, "alpha beta"], [gen, "gamma"], orders=(1,))
    assert pooled[1] == pytest.approx(4 / 6)  # micro average over both documents


# ----- mapping metrics ----------------------------------------------------------------------------------
def test_mapping_set_sizes_hand_computed():
    pairs = [("cat", "dog"), ("cat", "Dog"), ("cat", "cow"), ("sat", "sat"), ("sat", None), ("on", "in")]
    assert mapping_set_sizes(pairs) == {"cat": 2, "sat": 1, "on": 1}


def test_synonym_proportion_wordnet():
    pairs = [("happy", "glad"), ("cars", "automobiles"), ("house", "tree"), ("the", "the"), ("big", None)]
    assert synonym_proportion(pairs) == pytest.approx(3 / 4)
    assert synonym_proportion(pairs, count_identical=False) == pytest.approx(2 / 4)


@pytest.fixture(scope="module")
def glove():
    from dptext.spaces import get_space

    return get_space("glove-50d")


def test_mean_embedding_distance_matches_numpy(glove):
    pairs = [("king", "queen"), ("cat", "cat"), ("cat", "zzzznotaword"), ("dog", None)]
    e = glove.embeddings
    d = np.linalg.norm(e[glove.lookup("king")].astype(np.float64) - e[glove.lookup("queen")])
    assert mean_embedding_distance(glove, pairs) == pytest.approx((d + 0.0) / 2, rel=1e-6)


def test_effective_mapping_set_size_extremes():
    from dptext.mechanisms import get_mechanism

    rng = np.random.default_rng(0)
    tight = get_mechanism("rantext", epsilon=1e4, seed=0)
    wide = get_mechanism("rantext", epsilon=0.01, seed=0)
    assert effective_mapping_set_size(tight, ["the", "house"], 50, rng).tolist() == [1, 1]
    sizes = effective_mapping_set_size(wide, ["the", "house"], 200, rng)
    assert (sizes > 150).all()  # near-uniform over a large C_r: almost every draw distinct


# ----- model-backed metrics (real MiniLM, real SmolLM2) ---------------------------------------------------------
@pytest.fixture(scope="module")
def news_refs():
    from dptext.data import get_dataset

    return list(get_dataset("news").references[:60])


def test_mauve_self_near_one_and_shuffled_words_lower(news_refs):
    from dptext.metrics.quality import embed, mauve_score

    rng = np.random.default_rng(0)
    words = np.array(" ".join(news_refs).split())
    rng.shuffle(words)  # words shuffled across the whole set: same vocabulary, no text left
    shuffled = [" ".join(w) for w in np.array_split(words, len(news_refs))]
    e_ref, e_shuf = embed(news_refs), embed(shuffled)
    assert mauve_score(e_ref, e_ref) > 0.99
    assert mauve_score(e_shuf, e_ref) < 0.6


def test_coherence_and_alignment(news_refs):
    from dptext.data import get_dataset
    from dptext.metrics.quality import alignment, coherence

    docs = list(get_dataset("news").texts[:20])
    matched = coherence(docs, news_refs[:20])
    mismatched = coherence(docs, news_refs[20:40])
    assert 0 < mismatched < matched < 1
    assert alignment(docs[:3], docs[:3]) == pytest.approx(1.0, abs=1e-5)


def test_linear_head_separates_separable_features():
    from dptext.metrics.classify import LinearHead

    rng = np.random.default_rng(0)
    centers = rng.normal(size=(3, 16)) * 4
    y = np.repeat(["a", "b", "c"], 40)
    x = centers[np.repeat(np.arange(3), 40)] + rng.normal(size=(120, 16))
    head = LinearHead(seed=0).fit(x, y)
    assert head.classes == ["a", "b", "c"] and head.accuracy(x, y) == 1.0


def test_linear_head_accuracy_clean_beats_heavily_perturbed():
    from dptext.data import get_dataset
    from dptext.mechanisms import get_mechanism
    from dptext.metrics.classify import linear_head_accuracy

    ds = get_dataset("tweets")
    train, test = ds.split("train").sample(150, seed=0), ds.split("test").sample(60, seed=0)
    mech = get_mechanism("rantext", epsilon=0.5, seed=0)  # near-uniform replacements
    acc = linear_head_accuracy(train.texts, train.labels, test.texts, test.labels, settings=("clean", "test"),
                               perturb=lambda ts: [mech.perturb(t).text for t in ts])
    majority = max(test.labels.count(c) for c in set(test.labels)) / len(test)
    assert acc["clean"] >= majority + 0.08
    assert acc["test"] < acc["clean"] - 0.05


def test_zero_shot_parse_and_local_model():
    from dptext.metrics.classify import parse_label, zero_shot_accuracy

    names = ["negative", "neutral", "positive"]
    assert parse_label("The text is Positive, not negative", names) == "positive"
    assert parse_label("nonnegative vibes", names) is None
    texts = ["I love this, best flight ever!", "Worst service, lost my bag again."]
    res = zero_shot_accuracy(texts, ["positive", "negative"], label_names=names, max_tokens=6)
    assert res.n == 2 and len(res.answers) == 2
    assert res.accuracy == np.mean([p == y for p, y in zip(res.predictions, ["positive", "negative"])])
    assert res.invalid == sum(p is None for p in res.predictions)
