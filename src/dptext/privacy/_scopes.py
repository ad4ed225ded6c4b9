"""In-scope pair selection for the privacy audit (docs/algorithms.md, "Audit"), one rule per kind of claim.

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
* **ε within a random list, at fixed d*** (RANTEXT, detected by ``dstar_grid``): for ``d*``
  cycling through the 10/30/50/70/90 % quantiles of its law, ``x`` uniform and ``x'``
  uniform in ``C_r(x; d*) \\ {x}``, the mechanism's own rows at that ``d*``
  (``transition(x, dstar=d*)``, each over its input's own list, not renormalised). Proven
  for those rows: for ``y ∈ C_r(x) ∩ C_r(x')``, ``|ln Pr(y|x,d*) − ln Pr(y|x',d*)| ≤ ε +
  |ln(|C_r(x;d*)| / |C_r(x';d*)|)|`` (each weight ``exp(ε·u/2)`` lies in ``(1, e^{ε/2}]``,
  ``u ∈ (0, 1]``), which is ``ε`` when the two inputs share one list (the claim). Value:
  the largest log-ratio minus the list-size term, compared with ``ε``. The *mixture* over
  ``d*`` (the full ``transition``) is reported, not compared.
* **Cape in real contexts**: prompts from the ``tweets`` data; at each checked position
  ``x`` is the unit there and ``x'`` ranges over random units and ``x``'s nearest
  neighbours put in its place (same context: the device's logits at that position do not
  depend on the unit there, so every row shares one device pass). All outputs compared;
  the value is compared with the proven ``bound`` (Cape's set is all of ``V``).
* **Shared candidate lists** (CUSTEXT claiming the shared-list scope): every member of
  ``x``'s list must have exactly ``x``'s list; otherwise inputs "sharing" a list see
  different lists and the claim does not apply.
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


def claim_distances(mech, x: int, ys) -> np.ndarray:
    """``d(x, y)`` in the claim's metric: the mechanism's own (``claim_distances``, e.g. 1-Diffractor's
    list-index distance) when it has one, else the space's embedding distance."""
    own = getattr(mech, "claim_distances", None)
    return own(x, ys) if own is not None else mech.space.distances([x], ys)[0]


def all_pairs(mech, anchors: np.ndarray, rows: RowCache, metric: bool) -> list[PairValue]:
    out = []
    for a in range(len(anchors)):
        for b in range(a + 1, len(anchors)):
            x, x2 = int(anchors[a]), int(anchors[b])
            d = float(claim_distances(mech, x, [x2])[0])
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
        d = np.array(claim_distances(mech, x, pool), dtype=np.float64)
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


def random_list_pairs(mech, pool: np.ndarray, n_pairs: int, rng) -> list[PairValue]:
    """RANTEXT pairs at fixed ``d*``: value = max log-ratio over both lists − ``|ln(|C_r(x)|/|C_r(x')|)|``."""
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
        lr, y = max_log_ratio(p, q, (p > 0) & (q > 0))
        size_term = abs(float(np.log((p > 0).sum() / (q > 0).sum())))
        out.append(PairValue(x, x2, y, lr, lr - size_term, float(d[pool == x2][0])))
    return out


def list_sharing(lists: np.ndarray, domain: np.ndarray) -> dict:
    """Units of ``domain`` whose list has a member with a different list (padding ``-1`` ignored)."""
    srt = np.sort(lists, axis=1)
    bad = np.zeros(len(domain), dtype=bool)
    for s in range(0, len(domain), 4096):
        xs = domain[s : s + 4096]
        mine = srt[xs]
        members = lists[xs]
        valid = members >= 0
        theirs = srt[np.where(valid, members, 0)]  # [n, K, K]
        differs = (theirs != mine[:, None, :]).any(axis=2) & valid
        bad[s : s + 4096] = differs.any(axis=1)
    return {"units": int(len(domain)), "violations": int(bad.sum()),
            "example": int(domain[np.argmax(bad)]) if bad.any() else None}


def cape_context_pairs(mech, contexts, positions_per_context: int, alternatives: int, rng) -> tuple[list, dict]:
    """Cape pairs in real prompts (see the module docstring); also the paper-statement excess per pair."""
    from dptext.mechanisms.cape import bucket_law, rows_from_law
    from dptext.mechanisms.cape_bounds import cape_thm41

    out, over_thm, n_ctx = [], [], 0
    domain = np.flatnonzero(mech.input_mask)
    for text in contexts:
        seg = mech.segment(text)
        pos, idx = mech.vocab_positions(seg)
        if not len(pos):
            continue
        n_ctx += 1
        pick = rng.choice(len(pos), size=min(positions_per_context, len(pos)), replace=False)
        logits = mech.device.unit_logits(seg, pos[pick], mech.space)
        for row_logits, x in zip(logits, idx[pick].tolist()):
            near = np.argsort(mech.space.distances([x])[0])[1:4]
            others = rng.choice(domain, size=min(alternatives, len(domain)), replace=False)
            cand = np.unique(np.concatenate([[x], near, others]))
            u = mech.utility(np.repeat(row_logits[None, :], len(cand), axis=0), cand)
            b, counts, probs = bucket_law(u, mech.epsilon, mech.sensitivity, mech.n_buckets)
            rows = rows_from_law(b, counts, probs)
            thm = cape_thm41(mech.epsilon, counts)
            logr = np.log(rows)
            for a in range(len(cand)):
                for c in range(len(cand)):
                    if a == c:
                        continue
                    diff = logr[a] - logr[c]  # ordered pair: x = cand[a] in the numerator
                    j = int(np.argmax(diff))
                    lr = float(diff[j])
                    over_thm.append(lr - float(thm[a]))
                    d = float(mech.space.distances([int(cand[a])], [int(cand[c])])[0, 0])
                    out.append(PairValue(int(cand[a]), int(cand[c]), j, lr, lr, d))
    info = {"contexts": n_ctx, "pairs": len(out),
            "thm41_exceeded": int(np.sum(np.asarray(over_thm) > 1e-9)),
            "thm41_max_excess": float(max(over_thm)) if over_thm else float("nan"),
            "note": "ln Pr(y|x) − ln Pr(y|x') minus the paper's per-unit ε + ln(max|b|/min|b|) of x"}
    return out, info


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
