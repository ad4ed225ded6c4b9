"""perturb(): whitespace, punctuation, OOV and digits policies, seeds, records."""

import numpy as np
import pytest

from dptext.mechanisms import get_mechanism

TEXT = "Hello,  world!\n\nThe patient (John) was admitted... on 2024 with qwxzvq pain.  "


@pytest.mark.parametrize("name", ["rantext", "santext+", "custext+"])
def test_whitespace_and_punctuation_survive(name):
    m = get_mechanism(name, epsilon=2, seed=7, oov="keep")
    r = m.perturb(TEXT)
    seg = m.space.segment(TEXT)
    out_seg = [u for u in r.units]
    assert [u.ws for u in out_seg] == [p.ws for p in seg.pieces]
    for u in r.units:
        if all(c in "!,.()" for c in u.original):
            assert u.output == u.original and u.action == "kept" and u.reason == "punctuation"
    assert r.text.endswith(".  ") and "\n\n" in r.text
    assert r.text == "".join(u.ws + u.output for u in r.units) + "  "


def test_oov_policies():
    text = "the qwxzvq doctor"
    drop = get_mechanism("santext", epsilon=1, seed=1, oov="drop").perturb(text)
    assert [u.action for u in drop.units] == ["perturbed", "dropped", "perturbed"]
    assert len(drop.text.split()) == 2 and "qwxzvq" not in drop.text
    keep = get_mechanism("santext", epsilon=1, seed=1, oov="keep").perturb(text)
    assert keep.units[1].output == "qwxzvq" and keep.privacy["kept_units"] == ["qwxzvq"]
    rnd = get_mechanism("santext", epsilon=1, seed=1, oov="random").perturb(text)
    m = get_mechanism("santext", epsilon=1, seed=1)
    assert rnd.units[1].action == "perturbed" and m.space.lookup(rnd.units[1].output) >= 0
    assert drop.privacy["dropped"] == 1 and keep.privacy["kept"] == 1


def test_digits_policy():
    m = get_mechanism("custext", epsilon=1, seed=3)
    outs = [int(m.perturb("on 2024 today").units[1].output) for _ in range(300)]
    assert min(outs) >= 1 and max(outs) <= 1000 and len(set(outs)) > 200
    kept = get_mechanism("custext", epsilon=1, seed=3, digits="keep").perturb("on 2024 today")
    assert kept.units[1].output == "2024" and kept.units[1].reason == "digits"


def test_case_is_restored_for_case_folded_spaces():
    m = get_mechanism("santext", epsilon=50, seed=0)
    r = m.perturb("Hospital HOSPITAL hospital")
    assert [u.output for u in r.units] == ["Hospital", "HOSPITAL", "hospital"]


def test_seeds_reproduce_and_entropy_varies():
    text = "the doctor examined the patient in the small hospital near the river " * 5
    a = get_mechanism("rantext", epsilon=1, seed=11).perturb(text).text
    b = get_mechanism("rantext", epsilon=1, seed=11).perturb(text).text
    c = get_mechanism("rantext", epsilon=1).perturb(text).text
    d = get_mechanism("rantext", epsilon=1).perturb(text).text
    assert a == b
    assert c != d  # OS entropy: a collision over 70 units at eps 1 is practically impossible


def test_record_and_privacy_report():
    m = get_mechanism("rantext", epsilon=3, seed=2)
    r = m.perturb("The nurse, sadly, left.")
    d = r.to_dict()
    assert set(d) == {"text", "units", "privacy"}
    assert d["privacy"]["mechanism"] == "rantext" and d["privacy"]["epsilon"] == 3.0
    assert d["privacy"]["claim"]["kind"] == "dp-within-set"
    assert d["privacy"]["perturbed"] + d["privacy"]["kept"] + d["privacy"]["dropped"] == len(r.units)


def test_list_of_units_input():
    m = get_mechanism("santext", epsilon=1, seed=0)
    r = m.perturb(["doctor", "nurse", "!"])
    assert len(r.units) == 3 and r.units[2].output == "!"


def test_vectorised_sampler_matches_per_unit_law():
    """Many different units in one call still follow each unit's own row."""
    from stats import chi2_pvalue

    m = get_mechanism("santext", epsilon=4, seed=0)
    words = ["doctor", "nurse", "river", "music"] * 5000
    r = m.perturb(words)
    outs = np.asarray([m.space.lookup(u.output) for u in r.units])
    for k, w in enumerate(["doctor", "nurse", "river", "music"]):
        assert chi2_pvalue(outs[k::4], m.transition(w)) > 1e-4


@pytest.mark.parametrize("name", ["santext", "rantext"])
def test_dropped_oov_keeps_line_structure(name):
    m = get_mechanism(name, epsilon=3, seed=5)  # word-level (glove) and subword (cl100k) spaces
    text = "The cat sat.\nΩμέγαβ went home.\n\nΩμέγαβ\nEnd"  # out of both vocabularies
    r = m.perturb(text)
    assert "dropped" in {u.action for u in r.units}
    assert r.text.count("\n") == text.count("\n")
    lines = r.text.split("\n")
    assert lines[0].endswith(".") and lines[2] == "" and lines[3] == ""
    assert not lines[1].startswith(" ")  # the dropped unit's line starts with the next unit


def test_join_rules_for_dropped_units():
    from dptext.text import split_words

    def drop(text, bad=("Zz",)):
        seg = split_words(text)
        return seg.join([None if p.text in bad else p.text for p in seg.pieces])

    assert drop("foo Zz\nbar") == "foo\nbar"
    assert drop("a\n  Zz b") == "a\n  b"  # the line keeps its indentation
    assert drop("foo\nZz") == "foo\n"
    assert drop("Zz\nfoo") == "\nfoo"
    assert drop("  Zz foo") == "  foo"  # no stray space, original leading whitespace
    assert drop("one Zz two") == "one two"


def test_santext_plus_records_branch_per_unit():
    m = get_mechanism("santext+", epsilon=2, seed=9)
    words = ["the", "surgeon"] * 3000  # "the": non-sensitive, "surgeon": sensitive
    r = m.perturb(words)
    d = r.to_dict()["units"]
    the = [u for u in d if u["original"] == "the"]
    sur = [u for u in d if u["original"] == "surgeon"]
    assert all(u["sensitive"] is False for u in the) and all(u["sensitive"] is True for u in sur)
    assert {u["reason"] for u in sur} == {"sensitive"}
    kept = [u for u in the if u["reason"] == "non-sensitive-kept"]
    resampled = [u for u in the if u["reason"] == "non-sensitive-resampled"]
    assert len(kept) + len(resampled) == 3000
    assert all(u["output"] == "the" for u in kept)
    assert all(m.sensitive[m.space.lookup(u["output"])] for u in resampled)  # drawn from V_s
    assert abs(len(resampled) / 3000 - m.p) < 4 * (m.p * (1 - m.p) / 3000) ** 0.5
    assert r.units[0].sensitive is False and r.units[1].reason == "sensitive"
    # mechanisms without a sensitive split record None
    plain = get_mechanism("custext", epsilon=2, seed=0).perturb("the surgeon").to_dict()["units"]
    assert [u["sensitive"] for u in plain] == [None, None] and plain[1]["reason"] == "vocab"


def test_perturb_many_keeps_each_text_and_the_per_unit_law():
    """One vectorised call over many texts: each result is its own text's segmentation and join, and the
    outputs of one unit, pooled over the texts, follow the mechanism's row (chi-square at a fixed seed)."""
    from stats import chi2_pvalue

    m = get_mechanism("custext", epsilon=2.0, seed=0)
    texts = ["The river, at night.", "", "Zzyzxq\nriver 42!"] + ["river"] * 3000
    res = m.perturb_many(texts, rng=np.random.default_rng(3))
    assert len(res) == len(texts)
    for t, r in zip(texts[:3], res[:3]):
        seg = m.segment(t)
        assert [u.original for u in r.units] == [p.text for p in seg.pieces]
        assert r.text == seg.join([u.output for u in r.units])
    assert res[1].text == "" and res[0].text.count(", ") == 1 and res[0].text.endswith(".")
    assert res[2].units[0].action == "dropped" and "\n" in res[2].text
    samples = np.asarray([m.space.lookup(r.units[0].output) for r in res[3:]])
    assert chi2_pvalue(samples, m.transition("river")) > 1e-3


def test_clitics_are_units_of_their_own_and_in_the_word_vocabulary():
    from dptext.text import split_words

    text = "I don't know; CAN'T you? I'm sure O'Brien's car won't go, ma'am."
    seg = split_words(text)
    assert [p.text for p in seg.pieces] == [
        "I", "do", "n't", "know", ";", "CA", "N'T", "you", "?", "I", "'m", "sure", "O'Brien", "'s", "car", "wo",
        "n't", "go", ",", "ma'am", "."]
    assert seg.join() == text
    # every unit of a contraction is in the GloVe vocabulary, so a high-ε run drops nothing (negations survive)
    m = get_mechanism("santext+", epsilon=32, seed=5)
    r = m.perturb("She didn't like it and I'm not sure they'll come; it's John's.")
    assert not [u.original for u in r.units if u.reason == "oov"]
    assert all(m.space.lookup(w) >= 0 for w in ("n't", "'s", "'m", "'ll", "'re", "'ve", "'d"))


def test_a_clitic_replaced_by_a_word_is_set_apart():
    from dptext.text import split_words

    seg = split_words("I don't know. Google's car.")
    out = [p.text for p in seg.pieces]
    out[2], out[6] = "never", "'s"
    assert seg.join(out) == "I do never know. Google's car."
    out[6] = "bus"
    assert seg.join(out) == "I do never know. Google bus car."
    out[2] = None  # a dropped clitic leaves no stray space
    assert seg.join(out) == "I do know. Google bus car."
