"""What a mechanism returns and claims: the privacy claim, the per-unit record and the result.

Split from :mod:`dptext.mechanisms.base` (which re-exports every name here) so that the base class
holds the sampling pipeline and this module the records it produces. A unit's ``outcome`` (what was
sent) is computed here from its action, reason and output, per unit (:func:`_outcome`) or vectorised
over a whole call (:func:`_outcomes`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class PrivacyClaim:
    """What a mechanism promises (docs/algorithms.md); ``bound`` is the worst-case ε over any input pair."""

    mechanism: str
    epsilon: float
    kind: str  # "metric-dp" | "dp-within-set" | "none"
    bound: float | None  # float('inf') = unbounded across some inputs; None = no DP claim
    scope: str
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["bound"] == float("inf"):
            d["bound"] = "inf"
        return d


@dataclass
class UnitRecord:
    original: str
    output: str | None  # None when dropped
    action: str  # "perturbed" | "kept" | "dropped"
    reason: str  # "vocab" | "punctuation" | "digits" | "oov" | "stopword" | a sampler branch (below)
    ws: str = ""
    sensitive: bool | None = None  # in the mechanism's sensitive set (SANTEXT(+)); None: no such split
    # what was sent: "perturbed" (changed) | "kept" (by a rule) | "self" (drawn as itself) | "dropped"
    outcome: str | None = None


class PerturbResult:
    """Perturbed text plus a per-unit record; records are built lazily from parallel lists.

    Per unit: ``original``, ``output`` (None when dropped), ``action`` ("perturbed", "kept",
    "dropped"), ``reason`` and ``sensitive``. ``reason`` is why a unit bypassed the sampler
    ("punctuation", "digits", "oov", "stopword"), else "vocab", or, for mechanisms with a
    sensitive split (SANTEXT, SANTEXT+), the branch it took: "sensitive" (resampled),
    "non-sensitive-kept" (kept with probability 1 − p) or "non-sensitive-resampled".
    ``sensitive`` is True/False for units that reached such a sampler, None otherwise.

    ``outcome`` is what was *sent*, whatever the branch: "perturbed" (the output differs from the
    input), "kept" (sent unchanged by a rule: punctuation, stopword, digits/OOV ``keep``, SANTEXT+'s
    non-sensitive keep), "self" (sent unchanged because a random draw returned the input itself) or
    "dropped". :meth:`counts` counts outcomes, so a unit sent unchanged is never counted as perturbed.
    """

    __slots__ = ("text", "privacy", "_pieces", "_outputs", "_actions", "_reasons", "_sensitive", "_outcomes",
                 "_units")

    def __init__(self, text: str, pieces, outputs, actions, reasons, privacy: dict | None = None,
                 sensitive=None, outcomes=None) -> None:
        self.text = text
        self.privacy = privacy or {}
        self._pieces, self._outputs, self._actions, self._reasons = pieces, outputs, actions, reasons
        self._sensitive = sensitive if sensitive is not None else [None] * len(pieces)
        self._outcomes = outcomes if outcomes is not None else [
            _outcome(a, r, p.text, o) for p, o, a, r in zip(pieces, outputs, actions, reasons)]
        self._units = None

    @property
    def units(self) -> list[UnitRecord]:
        if self._units is None:
            self._units = [UnitRecord(p.text, o, a, r, p.ws, s, c) for p, o, a, r, s, c in
                           zip(self._pieces, self._outputs, self._actions, self._reasons, self._sensitive,
                               self._outcomes)]
        return self._units

    def counts(self) -> dict[str, int]:
        """Units per outcome: ``perturbed`` (changed), ``kept`` (by a rule), ``self`` (drawn as itself),
        ``dropped``; ``kept + self`` units were sent unchanged."""
        oc = self._outcomes
        return {a: oc.count(a) for a in OUTCOMES}

    @property
    def outcomes(self) -> list[str]:
        return self._outcomes

    def n_sampled(self) -> int:
        """Units that went through a random draw (action ``perturbed``), whatever came out."""
        return self._actions.count("perturbed")

    def kept_units(self) -> list[str]:
        """Units left unchanged by policy (OOV with ``oov='keep'``, digits kept...), not punctuation."""
        if "kept" not in self._actions:
            return []
        return [p.text for p, a, r in zip(self._pieces, self._actions, self._reasons)
                if a == "kept" and r != "punctuation"]

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "units": [{"original": p.text, "output": o, "action": a, "reason": r, "sensitive": s, "outcome": c}
                      for p, o, a, r, s, c in zip(self._pieces, self._outputs, self._actions, self._reasons,
                                                  self._sensitive, self._outcomes)],
            "privacy": self.privacy,
        }


OUTCOMES = ("perturbed", "kept", "self", "dropped")
#: branch reasons of units a mechanism kept by rule although their action is "perturbed"
RULE_KEPT = ("non-sensitive-kept",)


def _outcome(action: str, reason: str, original: str, output: str | None) -> str:
    """Outcome of one unit from its record (exact string comparison; the vectorised path folds case)."""
    if action == "dropped" or output is None:
        return "dropped"
    if action == "kept" or reason in RULE_KEPT:
        return "kept"
    return "self" if output == original else "perturbed"


# what happens to a unit: sampled, kept by policy, dropped (OOV), digits replaced, OOV replaced at random
_SAMPLE, _KEEP, _DROP, _DIGITS, _RANDOM = range(5)
_ACTIONS = np.asarray(["perturbed", "kept", "dropped", "perturbed", "perturbed"], dtype=object)


def _outcomes(kind: np.ndarray, reasons: np.ndarray, texts: np.ndarray, out: np.ndarray, fold: bool) -> list[str]:
    """Per unit: "dropped", "kept" (by a rule), "self" (a draw returned the input) or "perturbed".

    In a case-folded space outputs take the input's capitalisation, so a draw of the same word
    compares equal ignoring case."""
    same = out == texts
    if fold:
        differ = np.flatnonzero(~same & (kind != _DROP) & (kind != _KEEP))
        if len(differ):
            same[differ] = [out[p].lower() == texts[p].lower() for p in differ.tolist()]
    code = np.where(same, 2, 0)
    code[(kind == _KEEP) | np.isin(reasons, RULE_KEPT)] = 1
    code[kind == _DROP] = 3
    return np.asarray(OUTCOMES, dtype=object)[code].tolist()
