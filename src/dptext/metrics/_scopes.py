"""In-scope pair selection for the privacy audit (SPEC 5), one rule per kind of claim.

Every rule returns :class:`PairValue` records: the largest ``|ln Pr(y|x) − ln Pr(y|x')|``
over the outputs ``y`` the claim covers for that pair, in the claim's units.

* **metric DP** (SANTEXT, SANTEXT+; ``ln Pr(y|x) − ln Pr(y|x') ≤ ε·d(x,x')``): inputs drawn
  from the units that are always resampled (``sensitive`` when the mechanism has such a
  set: SANTEXT+ keeps non-sensitive units with probability ``1 − p``, which its claim
  excludes); all pairs among ``M`` random anchors plus each anchor's nearest neighbour
  (tight small-distance pairs). Value: ``L(x,x') / d(x,x')``, the audited ε per unit distance.
* **ε within a shared set, exact rows** (CUSTEXT, Cape; any mechanism without a random
  set): ``x`` uniform over the input domain, ``x'`` uniform over the other inputs in the
  support of ``Pr(·|x)`` (for CUSTEXT: ``x``'s candidate list, which its members share
  under the conservative strategy); outputs compared over the shared support
  ``supp(x) ∩ supp(x')`` (for aggressive lists: the outputs both lists contain, as claimed).
* **ε within a shared random set** (RANTEXT, detected by ``dstar_grid``): the claim holds
  *given* the adjacency list, so the audit conditions on it. For ``d*`` cycling through
  the 10/30/50/70/90 % quantiles of its law, ``x`` uniform and ``x'`` uniform in
  ``C_r(x; d*) \\ {x}`` (so each is in the other's list), the mechanism's own transition at
  that ``d*`` (its quadrature pinned to one point) is restricted and renormalised to the
  shared list ``C = C_r(x; d*) ∩ C_r(x'; d*)``, which is the exponential mechanism over
  ``C``; outputs compared over ``C``. The *mixture* over ``d*`` (the full ``transition``)
  is audited separately and reported, not compared: for pairs inside each other's median
  ``C_r`` and outputs inside both, its log-ratio exceeds ε because neighbouring inputs
  have lists of different sizes (``ln Z`` terms), which the claim does not cover.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANTEXT_QUANTILES = (0.1, 0.3, 0.5, 0.7, 0.9)


@dataclass
class PairValue:
    x: int
    x2: int
    y: int  # output attaining the value (-1 when none)
    log_ratio: float  # max |ln Pr(y|x) − ln Pr(y|x')| over the compared outputs
    value: float  # in the claim's units (log_ratio, or log_ratio / d for metric DP)
    distance: float = float("nan")


def max_log_ratio(p: np.ndarray, q: np.ndarray, support: np.ndarray | None = None) -> tuple[float, int]:
    """``max_y |ln p_y − ln q_y|`` over ``support`` (default: where either is > 0); ``inf`` where one is 0."""
    sel = (p > 0) | (q > 0) if support is None else support
    ys = np.flatnonzero(sel)
    if not len(ys):
        return 0.0, -1
    a, b = p[ys], q[ys]
    one_zero = (a > 0) != (b > 0)
    if one_zero.any():
        return float("inf"), int(ys[np.argmax(one_zero)])
    diff = np.abs(np.log(a) - np.log(b))
    j = int(np.argmax(diff))
    return float(diff[j]), int(ys[j])


TINY = 1e-300  # below this a probability may have underflowed to 0 in float64


def metric_log_ratio(p: np.ndarray, q: np.ndarray, bound: float) -> tuple[float, int]:
    """:func:`max_log_ratio` for a metric-DP pair whose claimed bound is ``bound = ε·d(x,x')``.

    Where one row is 0 and the other is ``r > 0``, the claim itself puts the zero at
    ``≥ r·exp(−bound)``; when that is below float64's range (``< 1e-300``) the zero is
    underflow, not a support difference, and the output is left out.
    """
    one_zero = (p > 0) != (q > 0)
    pos = np.maximum(p, q)
    underflow = one_zero & (np.log(np.where(pos > 0, pos, 1.0)) - bound < np.log(TINY))
    return max_log_ratio(p, q, ((p > 0) | (q > 0)) & ~underflow)


class RowCache:
    """``transition`` rows computed once per unit (the audit's main cost)."""

    def __init__(self, mech, progress=None, label: str = "transition rows") -> None:
        self.mech, self.rows = mech, {}
        self.progress = progress
        self.task = progress.add_task(label, total=None) if progress is not None else None

    def __call__(self, i: int) -> np.ndarray:
        i = int(i)
        if i not in self.rows:
            self.rows[i] = np.asarray(self.mech.transition(i), dtype=np.float64)
            if self.task is not None:
                self.progress.advance(self.task, 1)
        return self.rows[i]


def anchors_for(n_pairs: int) -> int:
    """Anchors ``M`` whose ``M(M−1)/2`` pairs cover ``n_pairs``."""
    return int(np.ceil((1 + np.sqrt(1 + 8 * max(1, n_pairs))) / 2))


def free_anchors(mech, domain: np.ndarray, m: int, rng) -> np.ndarray:
    """``m`` distinct inputs: half uniform over the domain, half by unit frequency (units text actually has)."""
    m = min(m, len(domain))
    uniform = rng.choice(domain, size=m - m // 2, replace=False)
    f = np.asarray(mech.space.freq, dtype=np.float64)[domain]
    if m // 2 == 0 or not (f > 0).any():
        return rng.choice(domain, size=m, replace=False)
    rest = np.setdiff1d(domain, uniform)
    fr = np.asarray(mech.space.freq, dtype=np.float64)[rest]
    k = min(m // 2, int((fr > 0).sum()))
    frequent = rng.choice(rest, size=k, replace=False, p=fr / fr.sum()) if k else rest[:0]
    return np.concatenate([uniform, frequent])


def all_pairs(mech, anchors: np.ndarray, rows: RowCache, metric: bool) -> list[PairValue]:
    out = []
    for a in range(len(anchors)):
        for b in range(a + 1, len(anchors)):
            x, x2 = int(anchors[a]), int(anchors[b])
            d = float(mech.space.distances([x], [x2])[0, 0])
            if metric:
                lr, y = metric_log_ratio(rows(x), rows(x2), mech.epsilon * d)
            else:
                lr, y = max_log_ratio(rows(x), rows(x2))
            val = (lr / d if d > 0 else (0.0 if lr == 0 else float("inf"))) if metric else lr
            out.append(PairValue(x, x2, y, lr, val, d))
    return out


def metric_pairs(mech, pool: np.ndarray, n_pairs: int, rng, rows: RowCache) -> list[PairValue]:
    anchors = rng.choice(pool, size=min(len(pool), anchors_for(n_pairs)), replace=False)
    out = all_pairs(mech, anchors, rows, metric=True)
    for x in anchors[: min(len(anchors), 10)].tolist():  # nearest neighbour in the pool: small d(x, x')
        d = mech.space.distances([x], pool)[0]
        d[pool == x] = np.inf
        x2 = int(pool[int(np.argmin(d))])
        dist = float(d.min())
        lr, y = metric_log_ratio(rows(x), rows(x2), mech.epsilon * dist)
        out.append(PairValue(x, x2, y, lr, lr / dist if dist > 0 else float("inf"), dist))
    return out


def support_pairs(mech, pool: np.ndarray, n_pairs: int, rng, rows: RowCache) -> list[PairValue]:
    out = []
    in_pool = np.zeros(mech.space.size, dtype=bool)
    in_pool[pool] = True
    for x in rng.choice(pool, size=min(len(pool), n_pairs), replace=False).tolist():
        p = rows(x)
        cands = np.flatnonzero((p > 0) & in_pool)
        cands = cands[cands != x]
        if not len(cands):
            continue
        x2 = int(rng.choice(cands))
        q = rows(x2)
        lr, y = max_log_ratio(p, q, (p > 0) & (q > 0))
        out.append(PairValue(x, x2, y, lr, lr, float(mech.space.distances([x], [x2])[0, 0])))
    return out


def pinned_row(mech, x: int, dstar: float) -> np.ndarray:
    """RANTEXT's own ``transition(x)`` conditioned on the single value ``dstar``."""
    return np.asarray(mech.transition(x, dstar=dstar), dtype=np.float64)


def random_set_pairs(mech, pool: np.ndarray, n_pairs: int, rng) -> list[PairValue]:
    if not hasattr(mech, "dstar_grid"):
        from dptext.errors import DPTextError

        raise DPTextError(f"{mech.name}: cannot condition its transition on d* (no dstar_grid); the audit needs it")
    grid = mech.dstar_grid()
    out = []
    tries = 0
    while len(out) < n_pairs and tries < 20 * n_pairs:
        tries += 1
        dstar = float(np.quantile(grid, RANTEXT_QUANTILES[len(out) % len(RANTEXT_QUANTILES)]))
        x = int(rng.choice(pool))
        d = mech.space.distances([x], pool)[0]
        cands = pool[(d < dstar) & (pool != x)]
        if not len(cands):
            continue
        x2 = int(rng.choice(cands))
        p, q = pinned_row(mech, x, dstar), pinned_row(mech, x2, dstar)
        shared = (p > 0) & (q > 0)
        p_c, q_c = np.where(shared, p, 0.0), np.where(shared, q, 0.0)
        p_c /= p_c.sum()
        q_c /= q_c.sum()
        lr, y = max_log_ratio(p_c, q_c, shared)
        out.append(PairValue(x, x2, y, lr, lr, float(d[pool == x2][0])))
    return out


def rantext_mixture(mech, pool: np.ndarray, n_pairs: int, rng, rows: RowCache) -> dict:
    """Full-transition log-ratios for pairs inside each other's median ``C_r`` (outputs inside both)."""
    med = float(np.median(mech.dstar_grid()))
    vals = []
    for _ in range(n_pairs):
        x = int(rng.choice(pool))
        dx = mech.space.distances([x])[0]
        cands = pool[(dx[pool] < med) & (pool != x)]
        if not len(cands):
            continue
        x2 = int(rng.choice(cands))
        dx2 = mech.space.distances([x2])[0]
        lr, _ = max_log_ratio(rows(x), rows(x2), (dx < med) & (dx2 < med))
        vals.append(lr)
    return {"pairs": len(vals), "median_dstar": med,
            "max": float(max(vals)) if vals else float("nan"), "mean": float(np.mean(vals)) if vals else float("nan"),
            "note": "mixture over d* (full transition), pairs and outputs inside each other's median C_r; "
                    "not covered by the claim (lists of different sizes), reported for information"}
