"""Text-level metrics (docs/algorithms.md): diversity, Rouge-L F1, retention ratio, n-gram leakage.

All of them work on *normalised units*: the word-level segmentation of
:func:`dptext.text.split_words` (letter runs, digit runs, single marks),
case-folded (docs/algorithms.md: equality of case-folded, whitespace-stripped units).
Every function accepts a string or an already-split list of units.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dptext.resources import is_punctuation, is_stopword
from dptext.text import split_words


def units(text: str | Sequence[str]) -> list[str]:
    """Normalised units of ``text`` (a string, or a list of units that is only normalised)."""
    if isinstance(text, str):
        return [p.text.casefold() for p in split_words(text).pieces]
    return [str(u).strip().casefold() for u in text if str(u).strip()]


def ngrams(seq: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)]


# ----- diversity ---------------------------------------------------------------------------------------
def diversity(text: str | Sequence[str]) -> float:
    """``Π_{n=2..4} |unique n-grams| / |n-grams|`` of one generation (docs/algorithms.md, InferDPT VI-F).

    InferDPT's text writes a sum but its reported values (<= 1) are the product, as docs/algorithms.md
    fixes. A text with fewer than 4 units has no 4-grams and scores 0 (degenerate output).
    """
    u = units(text)
    score = 1.0
    for n in (2, 3, 4):
        grams = ngrams(u, n)
        if not grams:
            return 0.0
        score *= len(set(grams)) / len(grams)
    return score


def mean_diversity(texts: Iterable[str | Sequence[str]]) -> float:
    vals = [diversity(t) for t in texts]
    return sum(vals) / len(vals) if vals else float("nan")


# ----- Rouge-L -----------------------------------------------------------------------------------------
def lcs_length(a: Sequence, b: Sequence) -> int:
    """Length of the longest common subsequence, bit-parallel (Hyyrö 2004): O(|a|·|b|/64).

    Bit ``j`` of ``match[c]`` marks ``b[j] == c``; ``V`` starts all ones and for each ``a_i``:
    ``U = V & match[a_i]``, ``V = (V + U) | (V - U)``. The LCS is the number of zero bits of V.
    """
    if not a or not b:
        return 0
    match: dict = {}
    for j, c in enumerate(b):
        match[c] = match.get(c, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for c in a:
        m = match.get(c)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def rouge_l(reference: str | Sequence[str], candidate: str | Sequence[str]) -> dict[str, float]:
    """Rouge-L on normalised units: ``P = LCS/|cand|``, ``R = LCS/|ref|``, ``F1 = 2PR/(P+R)``."""
    r, c = units(reference), units(candidate)
    lcs = lcs_length(r, c)
    p = lcs / len(c) if c else 0.0
    rec = lcs / len(r) if r else 0.0
    f1 = 2 * p * rec / (p + rec) if p + rec > 0 else 0.0
    return {"precision": p, "recall": rec, "f1": f1}


def rouge_l_f1(reference, candidate) -> float:
    return rouge_l(reference, candidate)["f1"]


def mean_rouge_l_f1(references: Sequence, candidates: Sequence) -> float:
    if len(references) != len(candidates):
        raise ValueError("references and candidates differ in length")
    vals = [rouge_l_f1(r, c) for r, c in zip(references, candidates)]
    return sum(vals) / len(vals) if vals else float("nan")


# ----- retention ---------------------------------------------------------------------------------------
def unit_pairs(results, *, include_punctuation: bool = False) -> list[tuple[str, str | None]]:
    """``(original, output)`` pairs from PerturbResult(s) (``output`` None = dropped).

    Units kept because they are punctuation are left out unless ``include_punctuation``.
    """
    if hasattr(results, "units"):
        results = [results]
    out = []
    for res in results:
        for u in res.units:
            if not include_punctuation and u.reason == "punctuation":
                continue
            out.append((u.original, u.output))
    return out


def retention_ratio(pairs_or_results, *, include_punctuation: bool = False) -> float:
    """Share of units left unchanged: ``#{y == x} / #units`` (case-folded; dropped units are not retained).

    Takes ``(original, output)`` pairs or PerturbResult(s); punctuation kept by policy is left out
    unless ``include_punctuation`` (Cape B.3 measures retention of perturbable tokens).
    """
    pairs = _as_pairs(pairs_or_results, include_punctuation)
    if not pairs:
        return float("nan")
    kept = sum(1 for x, y in pairs if y is not None and str(y).strip().casefold() == str(x).strip().casefold())
    return kept / len(pairs)


def _as_pairs(obj, include_punctuation: bool) -> list:
    if hasattr(obj, "units") or (isinstance(obj, (list, tuple)) and obj and hasattr(obj[0], "units")):
        return unit_pairs(obj, include_punctuation=include_punctuation)
    return list(obj)


# ----- n-gram leakage ----------------------------------------------------------------------------------
def ngram_leakage_counts(document, generation, orders=(1, 2, 3), *, skip_stopwords: bool = False
                         ) -> dict[int, tuple[int, int]]:
    """Per order ``n``: (distinct n-grams of the document found in the generation, distinct n-grams of the document).

    Punctuation units are removed before n-grams are formed; ``skip_stopwords`` also drops
    unigrams that are stopwords (bigrams and trigrams keep them).
    """
    d = [u for u in units(document) if not is_punctuation(u)]
    g = [u for u in units(generation) if not is_punctuation(u)]
    out = {}
    for n in orders:
        dg = set(ngrams(d, n))
        if skip_stopwords and n == 1:
            dg = {t for t in dg if not is_stopword(t[0])}
        gg = set(ngrams(g, n))
        out[n] = (len(dg & gg), len(dg))
    return out


def ngram_leakage(documents, generations, orders=(1, 2, 3), *, skip_stopwords: bool = False) -> dict[int, float]:
    """Share of the document's distinct n-grams found in the remote generation (docs/algorithms.md, InferDPT Table VI).

    Accepts one (document, generation) pair of strings or two parallel lists; over a list the
    share is pooled: ``Σ found / Σ distinct`` (micro average), so long documents weigh more.
    """
    if isinstance(documents, str):
        documents, generations = [documents], [generations]
    if len(documents) != len(generations):
        raise ValueError("documents and generations differ in length")
    hits = dict.fromkeys(orders, 0)
    total = dict.fromkeys(orders, 0)
    for doc, gen in zip(documents, generations):
        for n, (h, t) in ngram_leakage_counts(doc, gen, orders, skip_stopwords=skip_stopwords).items():
            hits[n] += h
            total[n] += t
    return {n: (hits[n] / total[n] if total[n] else float("nan")) for n in orders}
