"""Privacy audit of a mechanism's claim from its transition rows (docs/algorithms.md, "Audit").

``audit_mechanism(mech)`` computes, from the mechanism's own rows:

1. the **in-scope value**: the largest ``ln Pr(y|x) − ln Pr(y|x')`` over input pairs and
   outputs that the claim covers (rules in :mod:`dptext.privacy._scopes`): for metric DP
   (SANTEXT) the largest ``L(x,x') / d(x,x')``, compared with ``ε``; for CUSTEXT the largest
   ``L`` over pairs sharing a list, compared with ``ε``, after checking that every member of
   a list has that same list; for RANTEXT the actual rows at fixed ``d*`` over each input's
   own list, compared with the claimed ε after the proven list-size term; for Cape the largest ``L``
   in real ``tweets`` prompts, compared with the proven bound; ``∞`` where the compared
   supports differ;
2. the **unrestricted worst case**: the same log-ratio over all pairs of ``M`` inputs
   (``∞`` where supports differ). It is *judged* against ``claim.bound`` wherever the claim
   is finite over all of its inputs (metric DP over the always-resampled units, Cape over
   ``V``); within-list claims (CUSTEXT, RANTEXT) are unbounded across lists and it is
   reported only;
3. a **goodness-of-fit** check of the sampler against its rows: Pearson's chi-square on
   ``samples`` draws per unit, cells with expected count < 5 binned, any draw outside the
   support failing outright; Bonferroni level ``alpha / units``.

The audit passes when the in-scope value (and the judged unrestricted value) is at most the
claim plus ``tolerance`` (absolute, in the claim's units: float32 distances and quadrature
leave ~1e-6) and every fit passes. Mechanisms with no DP claim (``kind="none"``) are only
fit-checked. Fidelity to the published algorithm is a separate check
(:mod:`dptext.privacy.fidelity`, ``dptext audit --reference``).
"""

from __future__ import annotations

import math
import numpy as np

from dptext.errors import DPTextError
from dptext.privacy import _scopes
from dptext.privacy.audit_result import AuditResult
from dptext.privacy.gof import GofResult, binned_counts, goodness_of_fit

__all__ = ["AuditResult", "GofResult", "audit_mechanism", "audit_contexts", "binned_counts", "goodness_of_fit"]


# ----- the audit ---------------------------------------------------------------------------------------------
def _pool(mech, kind: str) -> np.ndarray:
    mask = np.asarray(mech.input_mask, dtype=bool).copy()
    if kind == "metric-dp" and hasattr(mech, "sensitive"):
        mask &= np.asarray(mech.sensitive, dtype=bool)
    pool = np.flatnonzero(mask)
    if len(pool) < 2:
        raise DPTextError(f"{mech.name}: fewer than 2 inputs in scope; nothing to audit")
    return pool


def audit_contexts(n: int = 4, seed: int = 0) -> list[str]:
    """``n`` real multi-unit prompts from the ``tweets`` data (its private split) for contextual mechanisms."""
    from dptext.data import get_dataset

    texts = get_dataset("tweets").split("private", seed=seed).texts
    picked = [t for t in texts if 8 <= len(t.split()) <= 40]
    return picked[:n]


def _unrestricted_judged(claim) -> bool:
    """Whether the claim promises a finite bound over every pair of its inputs."""
    if claim.kind == "metric-dp":
        return claim.bound is not None and math.isfinite(claim.bound)
    return claim.kind != "none" and claim.details.get("set") == "all of V" and claim.bound is not None


def require_per_unit(cls) -> None:
    """Refuse a document-level mechanism class (no per-unit rows to audit); checkable before building."""
    if not cls.per_unit:
        raise DPTextError(f"{cls.name}: a document-level mechanism; the per-unit audit does not apply")


def audit_mechanism(mech, *, pairs: int = 200, samples: int = 20000, gof_units: int = 3, tolerance: float = 1e-6,
                    alpha: float = 1e-3, mixture_pairs: int | None = None, seed: int | None = None,
                    progress=None, contexts: list[str] | None = None, reference: bool = False,
                    reference_samples: int = 3000) -> AuditResult:
    """Audit ``mech``'s privacy claim (see the module docstring); deterministic given ``seed``.

    ``contexts``: prompts for a contextual mechanism (default :func:`audit_contexts`).
    ``reference``: also run the fidelity comparison with the literal reference sampler
    on the ``gof_units`` checked units (:mod:`dptext.privacy.fidelity`).
    """
    if getattr(mech, "transition_samples", None) and not reference:
        from dptext.privacy.fidelity import has_reference

        if not has_reference(mech):
            raise DPTextError(f"{mech.name}: its transition is a Monte-Carlo estimate and it has no reference "
                              "sampler; nothing to audit")
        reference = True  # Monte-Carlo rows: the reference comparison is the audit these mechanisms allow
    require_per_unit(type(mech))
    rng = np.random.default_rng(seed)
    claim = mech.privacy()
    kind = claim.kind
    extra: dict = {}
    if mech.contextual:
        return _audit_contextual(mech, claim, pairs, samples, gof_units, tolerance, alpha, rng, contexts,
                                 reference, reference_samples, seed)
    if getattr(mech, "transition_samples", None):  # Monte-Carlo rows: only the reference comparison
        domain = _pool(mech, "any")
        anchors = _scopes.free_anchors(mech, domain, max(gof_units, 1), rng)[:gof_units]
        return AuditResult(mechanism=mech.name, epsilon=claim.epsilon, space=mech.space.name, claim=claim.to_dict(),
                           kind=kind, scope_rule="Monte-Carlo transition: not audited", audited=float("nan"),
                           claimed=None, tolerance=float(tolerance), pairs=0, worst={}, unrestricted=float("nan"),
                           unrestricted_pairs=0, unrestricted_infinite_share=0.0, unrestricted_bound=None,
                           unrestricted_judged=False, gof=[], gof_alpha=alpha,
                           fidelity=_fidelity(mech, anchors, reference_samples, seed, alpha))
    rows = _scopes.RowCache(mech, progress)
    domain = _pool(mech, "any")
    if kind == "none" or claim.bound is None:
        scoped, rule, claimed = [], "no claim", None
    elif kind == "metric-dp":
        pool = _pool(mech, kind)
        rule = ("metric DP: all pairs of random always-resampled inputs plus nearest neighbours; "
                "value L(x,x')/d(x,x')")
        scoped, claimed = _scopes.metric_pairs(mech, pool, pairs, rng, rows), float(claim.epsilon)
    elif hasattr(mech, "dstar_grid"):
        rule = ("random list at fixed d* (10..90% quantiles), x' in C_r(x; d*), the actual rows over each "
                "input's own list, outputs in both lists; proven: L ≤ ε + |ln(|C_r(x)|/|C_r(x')|)|; "
                "value L − |ln(|C_r(x)|/|C_r(x')|)| (= L when the list is shared, the claim)")
        scoped, claimed = _scopes.random_list_pairs(mech, domain, pairs, rng), _within_set(claim)
        n_mix = min(pairs, 10) if mixture_pairs is None else mixture_pairs
        if n_mix:
            extra["mixture"] = _scopes.rantext_mixture(mech, domain, n_mix, rng, rows)
    else:
        rule = "shared set: x' in the support of Pr(·|x), outputs over supp(x) ∩ supp(x')"
        scoped, claimed = _scopes.support_pairs(mech, domain, pairs, rng, rows), _within_set(claim)
        if hasattr(mech, "lists") and claim.details.get("strategy", "conservative") == "conservative":
            rule += "; every member of a list has that list"
            extra["list_sharing"] = _scopes.list_sharing(np.asarray(mech.lists), domain)
    judged = _unrestricted_judged(claim)
    free_domain = _pool(mech, kind) if kind == "metric-dp" else domain
    anchors = _scopes.free_anchors(mech, free_domain, _scopes.anchors_for(min(pairs, 100)), rng)
    # metric DP: zeros below float64's range where the claim itself predicts them are underflow
    free = _scopes.all_pairs(mech, anchors, rows, metric=kind == "metric-dp")
    gof_list = [goodness_of_fit(mech, int(x), samples, rng, rows(int(x)), alpha / max(1, gof_units))
                for x in anchors[:gof_units].tolist()]
    fid = _fidelity(mech, anchors[:gof_units], reference_samples, seed, alpha) if reference else []
    return _result(mech, claim, rule, claimed, tolerance, scoped, free, judged, gof_list, alpha, extra, fid)


def _result(mech, claim, rule, claimed, tolerance, scoped, free, judged, gof, alpha, extra, fidelity) -> AuditResult:
    """The audit's verdict: the worst scoped pair against ``claimed``, the unrestricted pairs ``free`` beside it."""
    worst = max(scoped, key=lambda pv: pv.value, default=None)
    audited = worst.value if worst is not None else (float("nan") if claimed is None else 0.0)
    lrs = [pv.log_ratio for pv in free]
    return AuditResult(
        mechanism=mech.name, epsilon=claim.epsilon, space=mech.space.name, claim=claim.to_dict(), kind=claim.kind,
        scope_rule=rule, audited=float(audited), claimed=claimed, tolerance=float(tolerance), pairs=len(scoped),
        worst=_worst(mech.space.units, worst), unrestricted=float(max(lrs, default=0.0)),
        unrestricted_pairs=len(free),
        unrestricted_infinite_share=float(np.mean([math.isinf(v) for v in lrs])) if lrs else 0.0,
        unrestricted_bound=_unrestricted_bound(claim, judged), unrestricted_judged=judged,
        gof=gof, gof_alpha=alpha, extra=extra, fidelity=fidelity,
    )


def _within_set(claim) -> float:
    """The ε a within-set claim promises inside its set: ``bound`` when finite, else ``epsilon``."""
    return float(claim.bound) if math.isfinite(claim.bound) else float(claim.epsilon)


def _unrestricted_bound(claim, judged: bool) -> float | None:
    if claim.bound is None:
        return None
    return float(claim.bound) if judged else float("inf")


def _worst(units, worst) -> dict:
    if worst is None:
        return {}
    return {"x": units[worst.x], "x2": units[worst.x2], "y": units[worst.y] if worst.y >= 0 else None,
            "log_ratio": worst.log_ratio, "distance": worst.distance}


def _fidelity(mech, anchors, samples: int, seed, alpha: float, context: str | None = None) -> list:
    from dptext.privacy.fidelity import compare, has_reference, reference_units

    if not has_reference(mech):
        return []
    if context is None:
        anchors = reference_units(mech, len(anchors), np.random.default_rng(seed))
    return compare(mech, [int(a) for a in anchors], samples=samples, seed=seed, alpha=alpha, context=context)


def _audit_contextual(mech, claim, pairs, samples, gof_units, tolerance, alpha, rng, contexts, reference,
                      reference_samples, seed) -> AuditResult:
    """Contextual mechanisms (Cape): pairs, fit and reference inside real prompts."""
    contexts = audit_contexts() if contexts is None else list(contexts)
    if not contexts:
        raise DPTextError(f"{mech.name}: no context to audit in")
    kind = claim.kind
    extra: dict = {}
    if kind == "none" or claim.bound is None:
        scoped, rule, claimed, judged = [], "no claim", None, False
    else:
        per_ctx = max(1, min(4, pairs // (20 * len(contexts)) or 1))
        alternatives = max(4, min(24, pairs // max(1, per_ctx * len(contexts))))
        scoped, info = _scopes.cape_context_pairs(mech, contexts, per_ctx, alternatives, rng)
        extra["cape_contexts"] = info
        rule = (f"same prompt ({info['contexts']} tweets), unit at a position swapped for random units and its "
                "nearest neighbours; all outputs; compared with the proven bound")
        claimed, judged = float(claim.bound), _unrestricted_judged(claim)
    gof_list, fid = [], []
    for text in contexts[:max(1, gof_units)] if gof_units else []:
        seg = mech.segment(text)
        pos, idx = mech.vocab_positions(seg)
        if not len(pos):
            continue
        x = int(idx[0])
        gof_list.append(goodness_of_fit(mech, x, samples, rng, alpha=alpha / max(1, gof_units), context=text))
        if reference:
            fid += _fidelity(mech, [x], reference_samples, seed, alpha / max(1, gof_units), context=text)
        if len(gof_list) >= gof_units:
            break
    return _result(mech, claim, rule, claimed, tolerance, scoped, scoped, judged, gof_list, alpha, extra, fid)
