"""The shared attack scorer (docs/algorithms.md).

* success@K of a unit: its normalised original (case-folded, whitespace
  stripped) equals one of the first ``K`` normalised reconstructions; exact
  equality, never substring matching;
* ``ASR@K = successes@K / attacked units``; protection level ``= 1 − ASR``;
* a unit the attack cannot represent (ranking ``None``) counts as a failure
  and is also reported separately (``unrepresentable``).

Also here: Rouge-L F1 over unit sequences (LCS-based) and the mean
reciprocal rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np



def normalize_unit(u: str | None) -> str:
    """Normalised unit for success checks: case-folded, whitespace stripped (docs/algorithms.md)."""
    return "" if u is None else str(u).strip().casefold()


@dataclass
class AttackScore:
    attack: str
    n_units: int
    k: int
    success_at_1: int
    success_at_k: int
    unrepresentable: int
    details: dict = field(default_factory=dict)

    @property
    def asr_at_1(self) -> float:
        return self.success_at_1 / self.n_units if self.n_units else 0.0

    @property
    def asr_at_k(self) -> float:
        return self.success_at_k / self.n_units if self.n_units else 0.0

    @property
    def protection_at_1(self) -> float:
        return 1.0 - self.asr_at_1

    @property
    def protection_at_k(self) -> float:
        return 1.0 - self.asr_at_k

    def to_dict(self) -> dict:
        return {"attack": self.attack, "n_units": self.n_units, "k": self.k,
                "asr_at_1": self.asr_at_1, "asr_at_k": self.asr_at_k,
                "protection_at_1": self.protection_at_1, "protection_at_k": self.protection_at_k,
                "success_at_1": self.success_at_1, "success_at_k": self.success_at_k,
                "unrepresentable": self.unrepresentable, **self.details}


def hit_ranks(truth: list[str], ranking: list) -> np.ndarray:
    """0-based rank of the truth in each ranking; -1 when absent or unrepresentable."""
    out = np.full(len(truth), -1, dtype=np.int64)
    for i, (t, cands) in enumerate(zip(truth, ranking)):
        if not cands:
            continue
        nt = normalize_unit(t)
        for r, c in enumerate(cands):
            if normalize_unit(c) == nt:
                out[i] = r
                break
    return out


def score(truth: list[str], ranking: list, *, k: int = 5, attack: str = "") -> AttackScore:
    if len(truth) != len(ranking):
        raise ValueError(f"{len(truth)} attacked units but {len(ranking)} rankings")
    ranks = hit_ranks(truth, ranking)
    unrep = sum(1 for c in ranking if c is None)
    found = ranks >= 0
    rr = np.where(found, 1.0 / np.maximum(ranks + 1.0, 1.0), 0.0)
    return AttackScore(attack=attack, n_units=len(truth), k=int(k),
                       success_at_1=int((ranks == 0).sum()), success_at_k=int((found & (ranks < k)).sum()),
                       unrepresentable=unrep, details={"mrr": float(rr.mean()) if len(rr) else 0.0})


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence (row-vectorised dynamic programme)."""
    if not a or not b:
        return 0
    ids: dict[str, int] = {}
    aa = np.asarray([ids.setdefault(x, len(ids)) for x in a])
    bb = np.asarray([ids.setdefault(x, len(ids)) for x in b])
    prev = np.zeros(len(bb) + 1, dtype=np.int64)
    for x in aa:
        eq = bb == x
        diag = np.where(eq, prev[:-1] + 1, 0)
        cur = np.maximum(diag, prev[1:])
        # cur[j] = max(diag[j], prev[j+1], cur[j-1]): a running maximum
        prev = np.concatenate(([0], np.maximum.accumulate(cur)))
    return int(prev[-1])


def rouge_l_f1(candidate: list[str], reference: list[str]) -> float:
    """Rouge-L F1 over normalised units: ``2PR/(P+R)``, ``P = LCS/|cand|``, ``R = LCS/|ref|``."""
    c = [normalize_unit(u) for u in candidate]
    r = [normalize_unit(u) for u in reference]
    lcs = lcs_length(c, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)


def edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance between two unit sequences (row-vectorised)."""
    prev = np.arange(len(b) + 1)
    bb = np.asarray(b, dtype=object)
    for i, x in enumerate(a, 1):
        sub = prev[:-1] + (bb != x)
        cur = np.empty_like(prev)
        cur[0] = i
        best = np.minimum(sub, prev[1:] + 1)
        # insertion chain: cur[j] = min(best[j-1], cur[j-1] + 1)
        for j in range(1, len(b) + 1):
            cur[j] = min(best[j - 1], cur[j - 1] + 1)
        prev = cur
    return int(prev[-1])
