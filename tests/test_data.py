"""Datasets: built-ins from installed packages, deterministic splits, user files, `dptext data`."""

import json

import numpy as np
import pytest

from dptext.cli import main
from dptext.data import Dataset, continuation_items, get_dataset, list_datasets, load_file, register_file
from dptext.errors import DPTextError


@pytest.fixture(scope="module")
def tweets():
    return get_dataset("tweets")


def test_registry_lists_builtins():
    assert {"tweets", "wiki", "news"} <= set(list_datasets())
    with pytest.raises(DPTextError, match="unknown dataset"):
        get_dataset("no-such-set")


def test_tweets_are_labelled_clean_text(tweets):
    assert tweets.kind == "classification" and len(tweets) > 30000
    assert set(tweets.labels) == {"negative", "neutral", "positive"}
    assert tweets.label_names == ("negative", "neutral", "positive")
    assert all(t.isascii() and "http" not in t and len(t.split()) >= 3 for t in tweets.texts)
    assert len(set(tweets.texts)) == len(tweets)  # deduplicated
    assert "self-driving cars just seem lazy and a waste of money" in tweets.texts[:5]


@pytest.mark.parametrize("name", ["wiki", "news"])
def test_continuation_sets_have_50_and_100_word_items(name):
    ds = get_dataset(name)
    assert ds.kind == "continuation" and len(ds) > 150
    assert all(len(t.split()) == 50 for t in ds.texts)
    assert all(len(r.split()) == 100 for r in ds.references)
    assert all("'''" not in t and "==" not in t and "[[" not in t for t in ds.corpus())
    assert len(set(ds.ids)) == len(ds)


def test_wiki_is_plain_sentences():
    ds = get_dataset("wiki")
    assert ds.texts[0].startswith("Anarchism is a political philosophy")
    assert all(t.isascii() for t in ds.corpus())


def test_splits_are_disjoint_complete_and_deterministic(tweets):
    idx = tweets.split_indices(seed=3)
    assert list(idx) == ["private", "shadow", "train", "test"]
    allidx = np.concatenate(list(idx.values()))
    assert len(allidx) == len(tweets) and len(np.unique(allidx)) == len(tweets)
    again = tweets.split_indices(seed=3)
    assert all(np.array_equal(idx[k], again[k]) for k in idx)
    other = tweets.split_indices(seed=4)
    assert not np.array_equal(idx["test"], other["test"])
    test = tweets.split("test", seed=3)
    assert test.name == "tweets:test" and test.texts[0] == tweets.texts[idx["test"][0]]
    assert test.labels[5] == tweets.labels[idx["test"][5]]
    custom = tweets.split_indices(seed=0, fractions={"a": 0.1, "b": 0.9})
    assert abs(len(custom["a"]) - 0.1 * len(tweets)) <= 1
    with pytest.raises(DPTextError, match="sum to 1"):
        tweets.split_indices(fractions={"a": 0.5})
    with pytest.raises(DPTextError, match="unknown split"):
        tweets.split("validation")


def test_sample_and_take(tweets):
    s = tweets.sample(10, seed=1)
    assert len(s) == 10 and s.texts == tweets.sample(10, seed=1).texts
    assert s.texts != tweets.sample(10, seed=2).texts
    assert set(s.ids) <= set(tweets.ids)
    neg = tweets.sample(200, seed=0).filter_label("negative")
    assert set(neg.labels) == {"negative"}


def test_continuation_items_cut_words():
    text = " ".join(f"w{i}" for i in range(400))
    items = continuation_items(text, 50, 100, max_items=5)
    assert len(items) == 2
    assert items[0][0].split() == [f"w{i}" for i in range(50)]
    assert items[1][1].split()[-1] == "w299"
    assert continuation_items("too short", 50, 100) == []


def test_user_files(tmp_path):
    txt = tmp_path / "notes.txt"
    txt.write_text("first private note\n\nsecond note here\n", encoding="utf-8")
    ds = get_dataset(str(txt))
    assert ds.kind == "text" and ds.texts == ("first private note", "second note here") and ds.name == "notes"
    jl = tmp_path / "labelled.jsonl"
    jl.write_text("\n".join(json.dumps({"text": f"text {i}", "label": "ab"[i % 2]}) for i in range(6)), "utf-8")
    register_file("mine", jl)
    ds = get_dataset("mine")
    assert ds.kind == "classification" and ds.labels[:2] == ("a", "b") and len(ds.split("test")) >= 1
    cont = tmp_path / "long.txt"
    cont.write_text(" ".join(["word"] * 160) + "\n", "utf-8")
    assert load_file(cont, continuation=True).kind == "continuation"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{oops\n', "utf-8")
    with pytest.raises(DPTextError, match="line 2: invalid JSON"):
        load_file(bad)
    with pytest.raises(DPTextError, match="does not exist"):
        get_dataset(str(tmp_path / "missing.jsonl"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", "utf-8")
    with pytest.raises(DPTextError, match="no texts"):
        load_file(empty)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9\n")
    with pytest.raises(DPTextError, match="not valid UTF-8"):
        load_file(latin)


def test_dataset_validates_columns():
    with pytest.raises(DPTextError, match="needs labels"):
        Dataset("x", "classification", ("a",))
    with pytest.raises(DPTextError, match="2 entries for 1"):
        Dataset("x", "classification", ("a",), labels=("p", "q"))


def test_data_command(capsys):
    assert main(["data"]) == 0
    out = capsys.readouterr().out
    assert "tweets" in out and "wiki" in out and "news" in out and "private=" in out
    assert main(["data", "news", "--json", "--show", "1"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["size"] == sum(info["splits"].values()) and len(info["examples"]) == 1
    assert main(["data", "nothing"]) == 2
    assert "unknown dataset" in capsys.readouterr().err


def test_repr_is_one_short_line_and_items_iterate(tweets):
    r = repr(tweets)
    assert "\n" not in r and len(r) < 200, r
    assert r.startswith("Dataset(name='tweets', kind='classification', size=") and "negative/neutral/positive" in r
    first = next(iter(tweets))
    assert (first.id, first.text, first.label, first.reference) == \
        (tweets.ids[0], tweets.texts[0], tweets.labels[0], None)
    some = tweets.take(range(5))
    assert [it.text for it in some] == list(tweets.texts[:5]) and len(list(some)) == 5
    assert tweets[-1].text == tweets.texts[-1]
    news = get_dataset("news")
    assert news[0].reference == news.references[0] and news[0].label is None
    with pytest.raises(IndexError):
        tweets[len(tweets)]


def test_first_load_reports_progress(monkeypatch):
    """A built-in set's first load is a progress task; a memoised one is not (nothing to wait for)."""
    from dptext.data import registry
    from dptext.progress import LogProgress

    lines = []
    prog = LogProgress(interval=0.0, write=lines.append)
    monkeypatch.delitem(registry._LOADED, "news", raising=False)
    ds = get_dataset("news", progress=prog)
    assert lines and lines[-1].startswith("dptext: loading dataset news: 1/1 (100%)")
    n = len(lines)
    assert get_dataset("news", progress=prog) is ds and len(lines) == n


def test_dataset_names_follow_the_one_name_rule(tmp_path):
    from dptext.data.registry import DATASETS, register_dataset

    assert get_dataset(" News ") is get_dataset("news")
    f = tmp_path / "mine.txt"
    f.write_text("one\ntwo\n", encoding="utf-8")
    register_file("My_Set", f)
    try:
        assert "my-set" in list_datasets()
        assert get_dataset("MY-SET").texts == get_dataset("my_set").texts == ("one", "two")
        with pytest.raises(DPTextError, match="already taken"):
            register_dataset("my-set", lambda: None)
    finally:
        DATASETS.pop("my-set", None)


def test_newsgroups_is_a_clean_balanced_topic_set():
    ng = get_dataset("newsgroups")
    assert ng.kind == "classification" and ng.label_names == ("alt.atheism", "sci.space")
    counts = {name: ng.labels.count(name) for name in ng.label_names}
    assert len(ng) >= 190 and min(counts.values()) >= 95  # 100 posts per group before empty ones are dropped
    for text in ng.texts:
        assert 10 <= len(text.split()) <= 100 and text.isascii()
        assert "@" not in text and "Subject:" not in text and "writes:" not in text and "http" not in text
    # every label is the group its post was posted to (the post's own Newsgroups: header)
    import io
    import zlib

    from dptext.data.builtin import _BunchUnpickler, _asset

    raw = _BunchUnpickler(io.BytesIO(zlib.decompress(_asset("gensim", "test", "test_data", "mini_newsgroup")
                                                     .read_bytes())), encoding="latin1").load()["data"]
    for item_id, label in zip(ng.ids, ng.labels):
        header = raw[int(item_id.rsplit("-", 1)[1])].split("\n\n", 1)[0]
        groups = next(line for line in header.splitlines() if line.startswith("Newsgroups:"))
        assert label in groups.split(":", 1)[1].replace(",", " ").split()


def test_newsgroups_file_admits_no_other_class():
    import io
    import os
    import pickle

    from dptext.data.builtin import _BunchUnpickler

    evil = pickle.dumps(os.getcwd, protocol=0)  # a pickle that names a function from another module
    with pytest.raises(DPTextError, match="unexpected class"):
        _BunchUnpickler(io.BytesIO(evil), encoding="latin1").load()


def test_clean_post_drops_headers_quotes_and_signature():
    from dptext.data.builtin import clean_post

    post = ("From: a@b.edu (A B)\nSubject: Re: orbits\n\nIn article <1@x.edu>, c@d.edu writes:\n> quoted line\n"
            "The shuttle reached orbit see http://nasa.gov or mail me at e@f.org today.\n-- \nA B, Some University\n")
    assert clean_post(post) == "The shuttle reached orbit see or mail me at today."
