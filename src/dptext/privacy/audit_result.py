"""The result of a privacy audit (:mod:`dptext.privacy.audit`): the compared values, the verdicts and the printed
summary."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from dptext.privacy.gof import GofResult

__all__ = ["AuditResult"]


@dataclass
class AuditResult:
    mechanism: str
    epsilon: float | None
    space: str
    claim: dict
    kind: str
    scope_rule: str
    audited: float  # in-scope value, claim units (nan when there is no claim to audit)
    claimed: float | None  # the value it is compared with
    tolerance: float
    pairs: int
    worst: dict
    unrestricted: float
    unrestricted_pairs: int
    unrestricted_infinite_share: float
    unrestricted_bound: float | None
    unrestricted_judged: bool
    gof: list[GofResult]
    gof_alpha: float
    extra: dict = field(default_factory=dict)
    fidelity: list = field(default_factory=list)

    @property
    def claim_holds(self) -> bool:
        if self.claimed is None:
            return True
        shared = self.extra.get("list_sharing")
        if shared is not None and shared["violations"]:
            return False
        ok = self.audited <= self.claimed + self.tolerance
        if self.unrestricted_judged:
            ok = ok and self.unrestricted <= self.unrestricted_bound + self.tolerance
        return ok

    @property
    def fidelity_passed(self) -> bool:
        return all(f.passed for f in self.fidelity)

    @property
    def gof_passed(self) -> bool:
        return all(g.passed for g in self.gof)

    @property
    def passed(self) -> bool:
        return self.claim_holds and self.gof_passed and self.fidelity_passed

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(claim_holds=self.claim_holds, gof_passed=self.gof_passed, fidelity_passed=self.fidelity_passed,
                 passed=self.passed)
        return _finite(d)

    def summary(self) -> str:
        fmt = _fmt
        lines = [f"mechanism  {self.mechanism}  ε={self.epsilon}  space={self.space}",
                 f"claim      {self.kind}: {self.claim.get('scope', '')}"]
        if self.claimed is None and self.scope_rule.startswith("Monte-Carlo") and "paper_statement" in \
                self.claim.get("details", {}):
            lines.append("audited    Monte-Carlo rows: the claim is the paper's statement, not proven (proven "
                         f"bound {self.claim.get('bound')}); the sampler is compared with the literal reference "
                         "sampler")
        elif self.claimed is None and self.scope_rule.startswith("Monte-Carlo"):
            lines.append("audited    Monte-Carlo rows: the claim is proven (docs/algorithms.md); the sampler is "
                         "compared with the literal reference sampler")
        elif self.claimed is None:
            lines.append("audited    no DP claim: only the sampler is checked")
        else:
            unit = " per unit distance" if self.kind == "metric-dp" else ""
            lines.append(f"scope      {self.scope_rule} [{self.pairs} pairs]")
            lines.append(f"audited    {fmt(self.audited)}{unit} vs claim {fmt(self.claimed)} + tolerance "
                         f"{self.tolerance:g}: {'PASS' if self.audited <= self.claimed + self.tolerance else 'FAIL'}")
            if self.worst:
                w = self.worst
                lines.append(f"worst      x={w['x']!r} x'={w['x2']!r} y={w['y']!r} ln-ratio {fmt(w['log_ratio'])}"
                             f" d(x,x')={fmt(w['distance'])}")
        judged = (f": {'PASS' if self.unrestricted <= (self.unrestricted_bound or 0) + self.tolerance else 'FAIL'}"
                  if self.unrestricted_judged else " (not judged: unbounded across sets, as claimed)")
        if self.unrestricted_pairs:
            lines.append(f"all pairs  max ln-ratio {fmt(self.unrestricted)} over {self.unrestricted_pairs} pairs "
                         f"({self.unrestricted_infinite_share:.0%} with differing supports); claim bound "
                         f"{fmt(self.unrestricted_bound)}{judged}")
        if self.kind != "none" and self.claim.get("details", {}).get("set") == "all of V":
            lines.append(f"proven     bound {fmt(self.claim.get('bound'))} (worst case of the mechanism as "
                         "implemented, any two inputs in one context)")
        for k, v in self.extra.items():
            if k == "list_sharing":
                verdict = "PASS" if not v["violations"] else "FAIL (the shared-list claim does not apply)"
                lines.append(f"lists      {v['violations']} of {v['units']} units have a list member with another "
                             f"list: {verdict}")
            elif k == "cape_contexts":
                lines.append(f"Thm 4.1    the paper's per-unit ε + ln(max|b|/min|b|) exceeded in "
                             f"{v['thm41_exceeded']} of {v['pairs']} ordered pairs (largest excess "
                             f"{fmt(v['thm41_max_excess'])}) over {v['contexts']} tweets prompts "
                             "(reported only: it is not a proven bound)")
            elif isinstance(v, dict) and "max" in v:
                lines.append(f"{k:10s} max {fmt(v['max'])}, mean {fmt(v['mean'])} over {v['pairs']} pairs "
                             f"({v['note']})")
        ps = ", ".join(f"{g.pvalue:.3g}" for g in self.gof)
        n = self.gof[0].samples if self.gof else 0
        if self.gof:
            lines.append(f"fit        {len(self.gof)} units x {n} draws: chi-square p = {ps or '-'} "
                         f"(level {self.gof_alpha / max(1, len(self.gof)):.2g} each): "
                         f"{'PASS' if self.gof_passed else 'FAIL'}")
        if self.fidelity:
            ps = ", ".join(f"{f.unit}: p={f.pvalue:.3g}" + (f", d* rows max diff {f.pinned['max_abs_diff']:.2g} "
                                                           f"({f.pinned['support_mismatches']} support mismatches)"
                                                           if f.pinned else "") for f in self.fidelity)
            lines.append(f"reference  {len(self.fidelity)} units x {self.fidelity[0].samples} draws, two-sample "
                         f"chi-square vs the literal reference sampler: {ps}: "
                         f"{'PASS' if self.fidelity_passed else 'FAIL'}")
        lines.append(f"result     {'PASS' if self.passed else 'FAIL'}")
        return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _finite(obj):
    if isinstance(obj, float) and (math.isinf(obj) or math.isnan(obj)):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else "nan")
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj
