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
excess. Each distinct input's excess is computed once (one sparse product) and kept. The fitted
term vectors are cached on disk (CSR arrays, memory-mapped) per space, corpus and split.
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.mechanisms._vocab import distinct
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

VERSION = 1  # of the fitted term-vector table: bump with any change to what fit_vectors computes
ROWS = 512  # distinct inputs per sparse product
_FITS: dict = {}


def corpus_texts(corpus: str, split: str) -> list[str]:
    from dptext.data import get_dataset

    ds = get_dataset(corpus)
    return list(ds.texts if split == "all" else ds.split(split).texts)


def fit_vectors(space, texts) -> tuple:
    """``(csr, seen)``: the L2-normalised TF-IDF term vectors as a CSR matrix [|V|, N] (rows of unseen
    units empty) and the mask of the units seen."""
    from scipy import sparse

    terms, docs = [], []
    for j, text in enumerate(texts):
        idx = space.lookup_many([p.text for p in space.segment(text).pieces])
        idx = idx[idx >= 0]
        terms.append(idx)
        docs.append(np.full(len(idx), j, dtype=np.int64))
    t = np.concatenate(terms) if terms else np.zeros(0, np.int64)
    d = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    n_docs = len(texts)
    tf = sparse.csr_matrix((np.ones(len(t)), (t, d)), shape=(space.size, n_docs))  # duplicates summed
    tf.sum_duplicates()
    df = np.diff(tf.indptr)
    idf = np.log((1.0 + n_docs) / (1.0 + df)) + 1.0
    w = sparse.diags(idf) @ tf
    norms = np.sqrt(np.asarray(w.multiply(w).sum(axis=1)).ravel())
    w = sparse.diags(np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)) @ w
    return w.tocsr(), df > 0


def load_vectors(space, corpus: str, split: str):
    """The fitted term vectors of ``space`` on ``corpus``/``split`` (cached on disk, memory-mapped)."""
    from scipy import sparse

    key = (space.name, space.cache_key, corpus, split)
    if key not in _FITS:
        path = cache.entry_path("syntf", f"{space.name}-{corpus}-{split}", cache.key_of(*key), "",
                                version=VERSION)
        if not path.exists():
            w, seen = fit_vectors(space, corpus_texts(corpus, split))
            cache.save_arrays(path, data=w.data.astype(np.float64), indices=w.indices.astype(np.int32),
                              indptr=w.indptr.astype(np.int64), shape=np.asarray(w.shape), seen=seen)
        a = cache.load_arrays(path)
        w = sparse.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=tuple(int(s) for s in a["shape"]))
        _FITS[key] = (w, np.asarray(a["seen"], dtype=bool))
    return _FITS[key]


@register("syntf")
class SynTF(Mechanism):
    """SynTF (word level): the exponential mechanism over the corpus vocabulary, TF-IDF cosine utility."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"corpus": "tweets", "split": "shadow"}

    def __init__(self, *, epsilon: float, corpus: str = "tweets", split: str = "shadow", **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        from dptext.data import SPLITS, list_datasets

        if corpus not in list_datasets():
            raise DPTextError(f"unknown corpus {corpus!r} for syntf; choose one of {', '.join(list_datasets())}")
        if split not in (*SPLITS, "all"):
            raise DPTextError(f"unknown split {split!r}; choose one of {', '.join((*SPLITS, 'all'))}")
        self.corpus, self.split = corpus, split
        self.vectors, self.seen = load_vectors(self.space, corpus, split)
        self.support = np.flatnonzero(self.seen)
        if not len(self.support):
            raise DPTextError(f"the corpus {corpus}/{split} has no unit in the vocabulary of {self.space.name}")
        self._tables: dict[int, tuple] = {}  # x -> (excess ids, cumulative excess, Pr(excess part))
        self._flat = None

    def settings(self) -> dict:
        return {**super().settings(), "corpus": self.corpus, "split": self.split}

    @property
    def output_mask(self) -> np.ndarray:
        return self.seen

    # ----- exact rows ------------------------------------------------------------------------------------
    def utilities(self, ids) -> np.ndarray:
        """``u(x, ·)`` over the space for input rows ``ids`` [len(ids), |V|] (dense, float64)."""
        ids = np.asarray(ids, dtype=np.int64)
        return np.clip((self.vectors[ids] @ self.vectors.T).toarray(), 0.0, 1.0)

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
        todo = distinct(np.asarray(idx, dtype=np.int64))
        todo = todo[[int(t) not in self._tables for t in todo.tolist()]]
        base = float(len(self.support))
        for s in range(0, len(todo), ROWS):
            rows = todo[s : s + ROWS]
            sim = (self.vectors[rows] @ self.vectors.T).tocsr()
            for r, x in enumerate(rows.tolist()):
                lo, hi = sim.indptr[r], sim.indptr[r + 1]
                ids = sim.indices[lo:hi].astype(np.int64)
                excess = np.expm1(self.epsilon * np.clip(sim.data[lo:hi], 0.0, 1.0) / 2.0)
                mass = float(excess.sum())
                cdf = np.cumsum(excess) / mass if mass > 0 else np.zeros(0)
                self._tables[x] = (ids if mass > 0 else ids[:0], cdf, mass / (mass + base))
        if len(todo):
            self._flat = None

    def _flat_tables(self):
        """Every prepared input as flat arrays: excess ids, ``k + cdf`` (segment ``k``), starts, ends, Pr(excess)."""
        if self._flat is None:
            keys = np.fromiter(self._tables, dtype=np.int64, count=len(self._tables))
            tabs = [self._tables[int(k)] for k in keys]
            sizes = np.array([len(t[0]) for t in tabs], dtype=np.int64)
            seg = np.full(self.space.size, -1, dtype=np.int64)
            seg[keys] = np.arange(len(keys))
            ends = np.cumsum(sizes)
            ids = np.concatenate([t[0] for t in tabs]) if len(tabs) else np.zeros(0, np.int64)
            cdf = np.concatenate([k + t[1] for k, t in enumerate(tabs)]) if len(tabs) else np.zeros(0)
            self._flat = (seg, ids, cdf, ends - sizes, ends, np.array([t[2] for t in tabs]))
        return self._flat

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        self._prepare(idx)
        seg, ids, cdf, starts, ends, p_ex = self._flat_tables()
        k = seg[idx]
        out = self.support[rng.integers(0, len(self.support), len(idx))]  # the uniform part
        ex = np.flatnonzero(rng.random(len(idx)) < p_ex[k])
        if len(ex):
            kk = k[ex]
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

