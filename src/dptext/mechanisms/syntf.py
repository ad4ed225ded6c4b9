"""SynTF, word-level form (Weggenmann, Kerschbaum, SIGIR 2018; docs/algorithms.md).

Fit: the documents of a corpus (default: the ``shadow`` split of ``tweets``, not the private one) are
cut into units of the space; ``tf(t,D)`` counts unit ``t`` in document ``D`` and
``idf(t) = ln((1 + N)/(1 + df(t))) + 1``. The term vector of ``t`` is its column of the document × term
TF-IDF matrix, ``v_t = (tf(t,D)·idf(t))_D``, L2-normalised (``idf(t)`` scales the whole vector, so the
cosine below equals that of the raw term-frequency vectors). ``V_c``: the units seen in the corpus.

Per unit ``x``: the exponential mechanism over ``V_c`` with the utility ``u(x,y) = cos(v_x, v_y) ∈ [0, 1]``
(weights are non-negative; a unit outside the corpus has the zero vector and ``u = 0``) and the
sensitivity the paper states, ``Δu = 1`` (the utility's range):
``Pr(y|x) = exp(ε·u(x,y)/2) / Σ_{y'∈V_c} exp(ε·u(x,y')/2)``.

Claim (proof in docs/algorithms.md): ε-DP between any two inputs of ``V``, ``bound = ε``
(``kind = "dp-within-set"``, set all of ``V``).

Sampling: the weight ``exp(ε·u/2) = 1 + (exp(ε·u/2) − 1)`` splits each row into a uniform part over
``V_c`` (mass ``|V_c|``) and the excess over the units that share a document with ``x`` (sparse):
one uniform draw decides the part, then a uniform unit of ``V_c`` or an inverse-CDF draw from the
excess. The fitted term vectors and the cosines of every pair of units that share a document (the
sparse ``u``, at most ``Σ_D |D|²`` entries: 1.8 M for the tweets' shadow split) are cached on disk per
space, corpus and split (plain arrays, memory-mapped); the first draw at an ε turns the cosines into every
input's excess table at once (``expm1``, a per-row cumulative sum), cached per ε too (a fresh process then only
maps it), so nothing grows with the inputs seen. The sparse products are numpy's (no scipy on the sampling path).
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.mechanisms._rows import segmented_cumsum
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

VERSION = 2  # of the fitted term-vector arrays: bump with any change to what fit_vectors computes
PAIRS_VERSION = 1  # of the cached pair cosines: bump with any change to what pair_cosines computes
TABLES_VERSION = 1  # of the cached per-ε excess tables: bump with any change to what excess_tables computes
ROWS = 512  # input units per sparse product (building the pair cosines)
_FITS: dict = {}


def corpus_texts(corpus: str, split: str) -> list[str]:
    from dptext.data import get_dataset

    ds = get_dataset(corpus)
    return list(ds.texts if split == "all" else ds.split(split).texts)


def _ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, position)`` of every index in the ranges ``[starts[i], ends[i])`` (vectorised)."""
    lens = ends - starts
    owner = np.repeat(np.arange(len(starts)), lens)
    pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)
    return owner, pos


class TermVectors:
    """L2-normalised TF-IDF term vectors of a corpus as two sparse layouts (numpy arrays, no scipy on the
    sampling path): term-major ``(t_ptr, t_doc, t_val)`` and document-major ``(d_ptr, d_term, d_val)``."""

    def __init__(self, a: dict) -> None:
        self.t_ptr, self.t_doc, self.t_val = a["t_ptr"], a["t_doc"], a["t_val"]
        self.d_ptr, self.d_term, self.d_val = a["d_ptr"], a["d_term"], a["d_val"]
        self.size = len(self.t_ptr) - 1
        self.seen = np.diff(self.t_ptr) > 0

    def products(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(row, term, cos)`` for every term sharing a document with ``ids[row]`` (sparse product)."""
        ids = np.asarray(ids, dtype=np.int64)
        row, pos = _ranges(self.t_ptr[ids], self.t_ptr[ids + 1])
        doc, vx = self.t_doc[pos], self.t_val[pos]
        own, pos2 = _ranges(self.d_ptr[doc], self.d_ptr[doc + 1])
        key = row[own] * self.size + self.d_term[pos2]
        val = vx[own] * self.d_val[pos2]
        order = np.argsort(key, kind="stable")
        key, val = key[order], val[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else key[:0]
        sums = np.add.reduceat(val, first) if len(key) else val
        uk = key[first]
        return uk // self.size, uk % self.size, np.clip(sums, 0.0, 1.0)


def fit_vectors(space, texts) -> dict:
    """The arrays of :class:`TermVectors` for ``texts`` over the units of ``space``."""
    terms, docs = [], []
    for j, text in enumerate(texts):
        idx = space.lookup_many([p.text for p in space.segment(text).pieces])
        idx = idx[idx >= 0]
        terms.append(idx)
        docs.append(np.full(len(idx), j, dtype=np.int64))
    t = np.concatenate(terms) if terms else np.zeros(0, np.int64)
    d = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    n_docs, size = len(texts), space.size
    pair, tf = np.unique(t * n_docs + d, return_counts=True)  # sorted by term, then document
    pt, pd = pair // n_docs, pair % n_docs
    df = np.bincount(pt, minlength=size)
    idf = np.log((1.0 + n_docs) / (1.0 + df)) + 1.0
    w = tf * idf[pt]
    norm = np.sqrt(np.bincount(pt, weights=w * w, minlength=size))
    w = w / norm[pt]
    t_ptr = np.concatenate(([0], np.cumsum(df)))
    by_doc = np.lexsort((pt, pd))
    d_ptr = np.concatenate(([0], np.cumsum(np.bincount(pd, minlength=n_docs))))
    return {"t_ptr": t_ptr, "t_doc": pd.astype(np.int32), "t_val": w, "d_ptr": d_ptr,
            "d_term": pt[by_doc].astype(np.int64), "d_val": w[by_doc]}


def vectors_path(space, corpus: str, split: str):
    """Where the fitted term vectors of ``space`` on ``corpus``/``split`` are cached."""
    key = (space.name, space.cache_key, corpus, split)
    return cache.entry_path("syntf", f"{space.name}-{corpus}-{split}", cache.key_of(*key), "", version=VERSION)


def load_vectors(space, corpus: str, split: str) -> TermVectors:
    """The fitted term vectors of ``space`` on ``corpus``/``split`` (cached on disk, memory-mapped)."""
    key = (space.name, space.cache_key, corpus, split)
    if key not in _FITS:
        path = vectors_path(space, corpus, split)
        if not path.exists():
            cache.save_arrays(path, **fit_vectors(space, corpus_texts(corpus, split)))
        _FITS[key] = TermVectors(cache.load_arrays(path))
    return _FITS[key]


def pair_cosines(vectors: TermVectors) -> dict:
    """Every nonzero ``u(x, y)`` as a row-major sparse matrix over the units: ``ptr`` [|V|+1], ``term``
    (int32, ascending inside a row) and ``cos`` (float64, the values :meth:`TermVectors.products` gives)."""
    ids = np.flatnonzero(vectors.seen)
    rows, terms, coss = [], [], []
    for s in range(0, len(ids), ROWS):
        row, term, cos = vectors.products(ids[s : s + ROWS])
        rows.append(ids[s : s + ROWS][row])
        terms.append(term.astype(np.int32))
        coss.append(cos)
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    ptr = np.concatenate(([0], np.cumsum(np.bincount(row, minlength=vectors.size))))
    return {"ptr": ptr, "term": np.concatenate(terms) if terms else np.zeros(0, np.int32),
            "cos": np.concatenate(coss) if coss else np.zeros(0)}


def load_pairs(space, corpus: str, split: str) -> dict:
    """:func:`pair_cosines` of the fitted term vectors (cached on disk, memory-mapped)."""
    key = ("pairs", space.name, space.cache_key, corpus, split)
    if key not in _FITS:
        path = cache.entry_path("syntf", f"{space.name}-{corpus}-{split}-pairs", cache.key_of(*key[1:]), "",
                                version=PAIRS_VERSION)
        if not path.exists():
            cache.save_arrays(path, **pair_cosines(load_vectors(space, corpus, split)))
        _FITS[key] = cache.load_arrays(path)
    return _FITS[key]


def excess_tables(pairs: dict, epsilon: float, n_support: int) -> dict:
    """Every input's excess table at once, from the pair cosines: segment ``x`` holds the units ``y`` with
    ``u(x,y) > 0``, cumulative excess ``cdf = x + Σ_{y' ≤ y} (e^{εu/2} − 1) / mass`` (the segment's index
    added, so one ``searchsorted`` serves all), and ``p_ex = Pr(excess part) = mass / (mass + |V_c|)``.
    Built once per ε (about 35 ms for the tweets' 1.8 M pairs) and cached (14 MB per ε), so that a fresh
    process's first draw only maps it."""
    ptr = pairs["ptr"]
    starts, ends = ptr[:-1], ptr[1:]
    excess = np.expm1(epsilon * np.asarray(pairs["cos"]) / 2.0)
    cum = segmented_cumsum(excess, ptr)
    mass = np.zeros(len(starts))
    full = ends > starts
    mass[full] = cum[ends[full] - 1]  # each row's total: the last of its cumulative sums
    owner = np.repeat(np.arange(len(starts)), ends - starts)
    cdf = owner + cum / np.where(mass > 0, mass, 1.0)[owner]
    cdf[ends[full] - 1] = owner[ends[full] - 1] + 1.0  # each row's last share is exactly 1
    return {"cdf": cdf, "p_ex": mass / (mass + float(n_support))}


@register("syntf")
class SynTF(Mechanism):
    """SynTF (word level): the exponential mechanism over the corpus vocabulary, TF-IDF cosine utility."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"corpus": "tweets", "split": "shadow"}

    def __init__(self, *, epsilon: float, corpus: str = "tweets", split: str = "shadow", **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        if not vectors_path(self.space, corpus, split).exists():  # fitted only after these checks passed, so
            from dptext.data import SPLITS, list_datasets  # a cached fit proves the names (and a cold start

            if corpus not in list_datasets():  # skips importing the data registry, ~20 ms)
                raise DPTextError(f"unknown corpus {corpus!r} for syntf; choose one of {', '.join(list_datasets())}")
            if split not in (*SPLITS, "all"):
                raise DPTextError(f"unknown split {split!r}; choose one of {', '.join((*SPLITS, 'all'))}")
        self.corpus, self.split = corpus, split
        self.vectors = load_vectors(self.space, corpus, split)
        self.seen = self.vectors.seen
        self.support = np.flatnonzero(self.seen)
        if not len(self.support):
            raise DPTextError(f"the corpus {corpus}/{split} has no unit in the vocabulary of {self.space.name}")
        self._flat = None  # every input's excess table, built by the first draw (_prepare)

    def settings(self) -> dict:
        return {**super().settings(), "corpus": self.corpus, "split": self.split}

    @property
    def output_mask(self) -> np.ndarray:
        return self.seen

    # ----- exact rows ------------------------------------------------------------------------------------
    def utilities(self, ids) -> np.ndarray:
        """``u(x, ·)`` over the space for input rows ``ids`` [len(ids), |V|] (dense, float64)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.zeros((len(ids), self.space.size))
        row, term, cos = self.vectors.products(ids)
        out[row, term] = cos
        return out

    def transition(self, x) -> np.ndarray:
        return self.transition_rows([self.index_of(x)])[0]

    def transition_rows(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return np.zeros((0, self.space.size))
        w = np.exp(self.epsilon * self.utilities(ids) / 2.0) * self.seen[None, :]
        return w / w.sum(axis=1, keepdims=True)

    # ----- sampling --------------------------------------------------------------------------------------
    def _prepare(self, idx: np.ndarray) -> None:
        """Every input's excess table (:func:`excess_tables`), cached on disk per ε and memory-mapped."""
        if self._flat is not None:
            return
        pairs = load_pairs(self.space, self.corpus, self.split)
        ptr = pairs["ptr"]
        key = cache.key_of(self.space.cache_key, self.corpus, self.split, PAIRS_VERSION, self.epsilon)
        path = cache.entry_path("syntf", f"{self.space.name}-{self.corpus}-{self.split}-eps{self.epsilon:g}", key,
                                "", version=TABLES_VERSION)
        if not path.exists():
            cache.save_arrays(path, **excess_tables(pairs, self.epsilon, len(self.support)))
        t = cache.load_arrays(path)
        self._flat = (pairs["term"], t["cdf"], ptr[:-1], ptr[1:], t["p_ex"])

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        self._prepare(idx)
        ids, cdf, starts, ends, p_ex = self._flat
        out = self.support[rng.integers(0, len(self.support), len(idx))]  # the uniform part
        ex = np.flatnonzero(rng.random(len(idx)) < p_ex[idx])
        if len(ex):
            kk = idx[ex]
            pos = np.searchsorted(cdf, kk + rng.random(len(ex)), side="right")
            out[ex] = ids[np.clip(pos, starts[kk], ends[kk] - 1)]
        return out

    def privacy(self) -> PrivacyClaim:
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="dp-within-set", bound=self.epsilon,
            scope="ε-DP between any two inputs (exponential mechanism over V_c with the TF-IDF cosine utility "
                  "in [0, 1], sensitivity 1); bound = ε over all of V",
            details={"set": "all of V", "sensitivity": 1.0, "corpus": self.corpus, "split": self.split,
                     "outputs": int(len(self.support)), "utility": "cosine of TF-IDF term vectors"},
        )

