"""Every on-disk cache entry carries the version of the code that built it (issue 28, survivor 1).

A fix to how a space, a neighbour table or CUSTEXT's lists are built must reach existing caches: bumping
the builder's version has to give a fresh entry (a rebuild), never the old one. Each test builds a small
entry in a temporary cache, checks that a second load is a hit, bumps the version and sees the builder run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dptext import cache
from dptext.spaces.glove import GloveSpace

SRC = Path(__file__).resolve().parents[1] / "src" / "dptext"


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE_DIR", str(tmp_path))
    return tmp_path


def _counting(monkeypatch, owner, name):
    calls = []
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def test_every_cache_entry_in_the_source_names_a_version():
    """Read from the source: each ``entry_path(...)`` call passes ``version=`` (the signature requires it too)."""
    missing, n = [], 0
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name == "entry_path":
                    n += 1
                    if not any(k.arg == "version" for k in node.keywords):
                        missing.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert n >= 15, n  # spaces, d_max, neighbours, IVF, calibration, CUSTEXT, Cape, attacks, data, ...
    assert not missing, "cache entries without a builder version: " + ", ".join(missing)


def test_entry_paths_differ_by_version_and_reject_a_missing_one(tmp_cache):
    a = cache.entry_path("k", "n", "abc", ".npy", version=1)
    b = cache.entry_path("k", "n", "abc", ".npy", version=2)
    assert a != b and a.parent == b.parent == tmp_cache / "k"
    with pytest.raises(TypeError):
        cache.entry_path("k", "n", "abc", ".npy")  # noqa: the missing version is the point
    for bad in (0, -1, 1.5, "1", True):
        with pytest.raises(ValueError):
            cache.entry_path("k", "n", "abc", ".npy", version=bad)


def test_a_space_is_rebuilt_when_its_version_changes(tmp_cache, monkeypatch):
    builds = _counting(monkeypatch, GloveSpace, "build")
    GloveSpace(size=200).load()
    GloveSpace(size=200).load()
    assert len(builds) == 1  # the second load is a cache hit
    monkeypatch.setattr(GloveSpace, "version", GloveSpace.version + 1)
    fresh = GloveSpace(size=200).load()
    assert len(builds) == 2 and fresh.build_seconds is not None


def test_d_max_is_recomputed_when_its_version_changes(tmp_cache, monkeypatch):
    from dptext.spaces import base

    space = GloveSpace(size=200).load()
    first = GloveSpace(size=200).load().d_max
    scans = _counting(monkeypatch, GloveSpace, "distances")
    assert GloveSpace(size=200).load().d_max == first and not scans  # read back from its entry
    monkeypatch.setattr(base, "DMAX_VERSION", base.DMAX_VERSION + 1)
    assert GloveSpace(size=200).load().d_max == pytest.approx(first) and scans
    assert space.size == 200


def test_a_neighbour_table_is_rebuilt_when_its_version_changes(tmp_cache, monkeypatch):
    from dptext.spaces import neighbours

    space = GloveSpace(size=200).load()
    builds = _counting(monkeypatch, neighbours, "build_table")
    first = neighbours.load_table(space, width=16)
    neighbours.load_table(space, width=16)
    assert len(builds) == 1
    monkeypatch.setattr(neighbours, "VERSION", neighbours.VERSION + 1)
    again = neighbours.load_table(space, width=16)
    assert len(builds) == 2
    np.testing.assert_array_equal(np.asarray(again.order), np.asarray(first.order))


def test_custext_lists_are_rebuilt_when_their_version_changes(tmp_cache, monkeypatch):
    """The survivor: lists built in a wrong order stayed in every warm cache after the fix."""
    from dptext.mechanisms import custext

    space = GloveSpace(size=200).load()
    builds = _counting(monkeypatch, custext, "build_lists")
    a = custext.CusText(epsilon=1.0, space=space, k=5, seed=0)
    custext.CusText(epsilon=1.0, space=space, k=5, seed=0)
    assert len(builds) == 1
    monkeypatch.setattr(custext, "LISTS_VERSION", custext.LISTS_VERSION + 1)
    b = custext.CusText(epsilon=1.0, space=space, k=5, seed=0)
    assert len(builds) == 2
    np.testing.assert_array_equal(np.asarray(a.lists), np.asarray(b.lists))
