"""Fidelity check: the fast sampler against the literal reference sampler (docs/algorithms.md, "Fidelity").

For each checked unit ``x``, ``n`` draws come from the mechanism's own sampler and ``n``
from :mod:`dptext.privacy.reference`. Two chi-square tests of homogeneity compare them:
one on the 2 × K table of output counts (outputs whose pooled count is below
``min_count`` merged, in order of decreasing count, into bins of at least ``min_count``),
one on the distance ``d(x, y)`` of the outputs cut at the deciles of the pooled sample
(power where the outputs spread over many rare units). The p-value is the smaller of
the two, doubled (Bonferroni). A
mechanism that honours its ε but is not the published algorithm (another noise scale,
a global Δφ, another ε, other candidate lists) fails here.

RANTEXT also gets an exact check at fixed ``d*``: its ``transition(x, dstar=…)`` must
equal the reference's exponential mechanism over the strict list ``{t : d(x,t) < d*}``,
with ``d*`` set to exact distances ``d(x, t_k)`` of near neighbours (where ``<`` and ``≤``
differ) and to quantiles of ``d*``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from dptext.errors import DPTextError
from dptext.privacy import reference as ref


@dataclass
class FidelityResult:
    unit: str
    epsilon: float
    samples: int
    statistic: float
    dof: int
    pvalue: float
    passed: bool
    context: str | None = None
    pinned: dict = field(default_factory=dict)
    distinct: int = 0  # distinct outputs of the fast sampler (a test on one output has no power)

    def to_dict(self) -> dict:
        return asdict(self)


def homogeneity(a: np.ndarray, b: np.ndarray, min_count: int = 10) -> tuple[float, int, float]:
    """Chi-square test that two samples of category ids share one law: ``(statistic, dof, p)``."""
    cats, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    ca = np.bincount(inv[: len(a)], minlength=len(cats)).astype(np.float64)
    cb = np.bincount(inv[len(a):], minlength=len(cats)).astype(np.float64)
    tot = ca + cb
    big = tot >= min_count
    rows_a, rows_b = list(ca[big]), list(cb[big])
    small = np.flatnonzero(~big)
    acc_a = acc_b = 0.0
    for j in small[np.argsort(-tot[small], kind="stable")]:
        acc_a, acc_b = acc_a + ca[j], acc_b + cb[j]
        if acc_a + acc_b >= min_count:
            rows_a.append(acc_a)
            rows_b.append(acc_b)
            acc_a = acc_b = 0.0
    if acc_a + acc_b > 0:
        if len(rows_a) > len(ca[big]):
            rows_a[-1] += acc_a
            rows_b[-1] += acc_b
        else:
            rows_a.append(acc_a)
            rows_b.append(acc_b)
    if len(rows_a) < 2:
        return 0.0, 0, 1.0
    stat, p, dof, _ = stats.chi2_contingency(np.array([rows_a, rows_b]), correction=False)
    return float(stat), int(dof), float(p)


def _family(mech) -> str:
    from dptext.mechanisms.cape import Cape
    from dptext.mechanisms.custext import CusText
    from dptext.mechanisms.noise import NoiseMapper
    from dptext.mechanisms.rantext import RanText
    from dptext.mechanisms.santext import SanText

    from dptext.privacy import reference_metricdp

    if reference_metricdp.handles(mech):  # the word-level metric-DP family (its own reference module)
        return "metricdp"
    from dptext.privacy import reference_diffractor

    if reference_diffractor.handles(mech):
        return "diffractor"
    for cls, fam in ((RanText, "rantext"), (SanText, "santext"), (CusText, "custext"), (Cape, "cape"),
                     (NoiseMapper, "noise")):
        if isinstance(mech, cls):
            return fam
    raise DPTextError(f"{mech.name}: no reference sampler (only RANTEXT, SANTEXT(+), CUSTEXT(+), Cape and the "
                      "noise mapper are stochastic mechanisms with a published algorithm)")


def has_reference(mech) -> bool:
    try:
        _family(mech)
    except DPTextError:
        return False
    return True


def reference_draws(mech, x: int, n: int, rng: np.random.Generator, context: str | None = None) -> np.ndarray:
    """``n`` draws of the literal reference for unit ``x`` (vocabulary index), from ``mech``'s parameters only."""
    fam = _family(mech)
    sp = mech.space
    eps = float(mech.epsilon)
    if fam == "metricdp":
        from dptext.privacy import reference_metricdp

        return reference_metricdp.draws(mech, x, n, rng)
    if fam == "diffractor":
        from dptext.privacy import reference_diffractor

        return reference_diffractor.draws(mech, x, n, rng)
    if fam == "rantext":
        dist = _metric_row(sp, x)
        return ref.rantext_draw(sp.embeddings, dist, eps, float(mech.z), n, rng)
    if fam == "santext":
        dist = sp.distances([x])[0].astype(np.float64)
        vocab = np.flatnonzero(mech.input_mask)
        sens = ref.santext_sensitive(vocab, np.asarray(mech.freqs, dtype=np.float64), mech.w)
        return ref.santext_draw(dist, x, eps, sens, mech.p, n, rng)
    if fam == "custext":
        if mech.strategy != "conservative":
            raise DPTextError(f"{mech.name}: the reference builds conservative lists only")
        vocab = np.flatnonzero(mech.input_mask)
        freq = np.asarray(mech.freqs, dtype=np.float64)
        sim = _similarity(sp, mech.similarity)
        members = ref.custext_list(sim, vocab, freq, x, mech.k)
        return ref.custext_draw(list(sim(x, members)), members, eps, n, rng)
    if fam == "cape":
        seg, pos, i = mech.locate(x, context)
        logits = mech.device.unit_logits(seg, np.asarray([pos]), sp)[0]
        u = ref.cape_utilities(logits, sp.distances([i])[0], sp.d_max, mech.clip, mech.lambda_l, mech.lambda_d)
        return ref.cape_draw(u, eps, mech.lambda_l + mech.lambda_d, mech.n_buckets, n, rng)
    return ref.noise_draw(sp.embeddings, x, float(mech.eta), bool(mech.exclude_original), n, rng)


def _similarity(space, kind: str):
    E = np.asarray(space.embeddings, dtype=np.float64)
    if kind == "cosine":
        norms = np.sqrt((E * E).sum(axis=1))
        En = E / np.where(norms > 0, norms, 1.0)[:, None]
        return lambda s, pool: En[np.asarray(pool)] @ En[s]
    return lambda s, pool: -np.sqrt(((E[np.asarray(pool)] - E[s]) ** 2).sum(axis=1))


def reference_units(mech, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` units to check: uniform over the inputs, except for CUSTEXT, whose literal list construction walks
    the vocabulary by frequency, so its units come from the 300 most frequent (their lists form first), and
    SynTF, whose units come from its corpus (a unit outside it has the uniform row: a check without power)."""
    domain = np.flatnonzero(mech.input_mask)
    if mech.name == "syntf":
        domain = np.flatnonzero(mech.input_mask & mech.seen)
    if _family(mech) == "custext":
        freq = np.asarray(mech.freqs, dtype=np.float64)[domain]
        domain = domain[np.argsort(-freq, kind="stable")[:300]]
    return [int(u) for u in rng.choice(domain, size=min(n, len(domain)), replace=False)]


def _metric_row(space, x: int) -> np.ndarray:
    """``d(x, ·)`` as the space defines it (``EmbeddingSpace.distances``, the values exact rows use)."""
    return np.asarray(space.distances([x])[0], dtype=np.float64)


def rantext_pinned(mech, x: int, neighbours=(1, 2, 5, 20), quantiles=(0.1, 0.5, 0.9), atol: float = 1e-9) -> dict:
    """Largest ``|transition(x, dstar) − reference row|`` over the fixed ``d*`` values, and support mismatches."""
    dist = _metric_row(mech.space, x)
    srt = np.sort(np.unique(dist))
    grid = mech.dstar_grid()
    dstars = [float(srt[min(k, len(srt) - 1)]) for k in neighbours] + [float(np.quantile(grid, q)) for q in quantiles]
    worst, mismatch = 0.0, 0
    for d in dstars:
        mine = np.asarray(mech.transition(x, dstar=d), dtype=np.float64)
        want = ref.rantext_row_at(dist, float(mech.epsilon), d)
        mismatch += int(((mine > 0) != (want > 0)).sum())
        worst = max(worst, float(np.abs(mine - want).max()))
    return {"dstars": dstars, "max_abs_diff": worst, "support_mismatches": mismatch,
            "passed": mismatch == 0 and worst <= atol}


def compare(mech, units, *, samples: int = 4000, seed: int | None = None, alpha: float = 1e-3,
            context: str | None = None) -> list[FidelityResult]:
    """Two-sample test of ``mech``'s sampler against its reference for each unit (Bonferroni ``alpha/len``)."""
    rng = np.random.default_rng(seed)
    level = alpha / max(1, len(units))
    out = []
    for x in units:
        i = mech.index_of(x)
        if context is None:
            fast = np.asarray(mech.sample(i, samples, rng), dtype=np.int64)
        else:
            fast = np.asarray(mech.sample(i, samples, rng, context=context), dtype=np.int64)
        slow = reference_draws(mech, i, samples, rng, context)
        stat, dof, p = homogeneity(fast, slow)
        dist = (mech.space.distances([i])[0].astype(np.float64) if not hasattr(mech, "claim_distances")
                else np.asarray(mech.claim_distances(i, np.arange(mech.space.size)), dtype=np.float64))
        edges = np.unique(np.quantile(dist[np.concatenate([fast, slow])], np.linspace(0.1, 0.9, 9)))
        _, _, p_d = homogeneity(np.searchsorted(edges, dist[fast], side="right"),
                                np.searchsorted(edges, dist[slow], side="right"))
        p = min(1.0, 2.0 * min(p, p_d))
        pinned = rantext_pinned(mech, i) if _family(mech) == "rantext" else {}
        ok = p >= level and pinned.get("passed", True)
        out.append(FidelityResult(mech.space.units[i], float(mech.epsilon), samples, stat, dof, p, ok, context,
                                  pinned, int(len(np.unique(fast)))))
    return out
