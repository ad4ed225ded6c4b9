"""What the playground computes: settings, a bounded cache of built mechanisms, the class of each
unit, rows ``Pr(y | x)`` (in context where the mechanism depends on it) and repeated runs.

Unit classes (what the page colours):

* ``perturbed``: the sampler replaced the unit by another one;
* ``self``: the sampler ran and drew the unit itself (``y = x``);
* ``kept``: a policy left the unit unchanged before any sampling (punctuation,
  stopword, out-of-vocabulary with ``oov=keep``, public text under an entity policy);
* ``dropped``: the unit was removed (out-of-vocabulary with ``oov=drop``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError, ParameterError
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.spec import MechanismSpec, declared_params, mechanism_class, spec_epsilon
from dptext.names import normalise_name
from dptext.spaces import list_spaces

MAX_TEXT_CHARS = 20_000  # the page says so when a paste is longer
MAX_UNITS = 3_000  # units per request; rows and runs scale with it
MAX_RUNS = 50
ROW_SAMPLES = 2_000  # draws behind a row that a mechanism estimates by sampling (a hover must be quick)


class WebError(DPTextError):
    """Bad input, answered as ``{"error": message, "field": field}`` with ``status``."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.field, self.status = field, status


@dataclass(frozen=True)
class Settings:
    """The mechanism settings a request names (validated; ``space=None`` = the mechanism's default)."""

    mechanism: str
    epsilon: float
    space: str | None
    oov: str

    @classmethod
    def parse(cls, body: dict, *, need_epsilon: bool = True) -> "Settings":
        """From a request body; every error names its field (``epsilon``, ``mechanism``...)."""
        raw = body.get("epsilon", 3) if need_epsilon else 1.0
        if raw is None or isinstance(raw, str) and not raw.strip():
            raise WebError("ε is required: give a number greater than 0", field="epsilon")
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
            raise WebError(f"ε must be a number greater than 0 (got {raw!r})", field="epsilon")
        try:
            eps = spec_epsilon(raw)  # the one rule on ε (mechanisms/spec.py), in the page's words
        except ParameterError as exc:
            raise WebError(str(exc).replace("epsilon", "ε"), field="epsilon") from None
        space = body.get("space") or None
        if space is not None and space not in list_spaces():
            raise WebError(f"unknown space {space!r}; choose one of {', '.join(list_spaces())}", field="space")
        settings = cls(normalise_name(body.get("mechanism") or "rantext"), eps, space, body.get("oov") or "drop")
        settings.spec()  # validates the rest
        if not mechanism_class(settings.mechanism).per_unit:
            raise WebError(f"{settings.mechanism} rewrites whole documents; the playground shows per-unit "
                           "mechanisms (use `dptext perturb` for it)", field="mechanism")
        return settings

    def spec(self) -> MechanismSpec:
        try:
            cls = mechanism_class(self.mechanism)
            options = {"transition_samples": ROW_SAMPLES} if "transition_samples" in declared_params(cls) else {}
            return MechanismSpec.from_dict({"mechanism": self.mechanism, "epsilon": self.epsilon,
                                            "space": self.space, "oov": self.oov, "options": options})
        except ParameterError as exc:
            raise WebError(str(exc), field=exc.param) from None

    def at(self, epsilon: float) -> "Settings":
        return Settings(self.mechanism, float(epsilon), self.space, self.oov)


def build(settings: Settings) -> Mechanism:
    """A mechanism from validated settings, through the one mechanism factory."""
    try:
        return settings.spec().build()
    except DPTextError as exc:
        raise WebError(str(exc), field=getattr(exc, "param", None)) from None


class MechanismCache:
    """Built mechanisms per settings, least recently used first out (``size`` at most)."""

    def __init__(self, size: int = 6) -> None:
        self.size = size
        self._items: OrderedDict[Settings, Mechanism] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, settings: Settings) -> Mechanism:
        with self._lock:
            mech = self._items.get(settings)
            if mech is not None:
                self._items.move_to_end(settings)
                return mech
        mech = build(settings)
        with self._lock:
            self._items[settings] = mech
            self._items.move_to_end(settings)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return mech

    def __len__(self) -> int:
        return len(self._items)


def check_text(value, *, field: str = "text") -> str:
    if not isinstance(value, str):
        raise WebError("the text must be a string", field=field)
    if not value.strip():
        raise WebError("the text is empty: type or paste something to perturb", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise WebError("the text holds an invalid character (a lone surrogate)", field=field) from None
    if len(value) > MAX_TEXT_CHARS:
        raise WebError(f"the text has {len(value):,} characters; the playground takes at most "
                       f"{MAX_TEXT_CHARS:,}: paste a shorter passage", field=field, status=413)
    return value


def same_unit(mech: Mechanism, a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    return a.lower() == b.lower() if mech.space.case_insensitive else a == b


def classify(mech: Mechanism, original: str, output: str | None, action: str) -> str:
    if action == "dropped":
        return "dropped"
    if action == "kept":
        return "kept"
    return "self" if same_unit(mech, original, output) else "perturbed"


def top_k(row: np.ndarray, units, k: int = 5) -> list[dict]:
    """The ``k`` most likely outputs of a row, most likely first."""
    k = min(int(k), len(row))
    best = np.argpartition(-row, k - 1)[:k]
    best = best[np.argsort(-row[best], kind="stable")]
    return [{"unit": units[i], "prob": float(row[i])} for i in best]


def segment_units(mech: Mechanism, text: str) -> list[str]:
    units = [p.text for p in mech.segment(text).pieces]
    if len(units) > MAX_UNITS:
        raise WebError(f"the text has {len(units):,} units; the playground takes at most {MAX_UNITS:,}",
                       field="text", status=413)
    return units


def sampled_positions(mech: Mechanism, units: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Positions whose unit goes to the sampler, and their vocabulary indices."""
    idx = mech.space.lookup_many(units)
    mask = mech.input_mask
    pos = [i for i, t in enumerate(units) if mech._policy_of(t) is None and idx[i] >= 0 and mask[idx[i]]]
    pos = np.asarray(pos, dtype=np.int64)
    return pos, idx[pos]


def transition(mech: Mechanism, context: str, position: int, k: int = 5) -> dict:
    """Top ``k`` of ``Pr(y | x)`` for the unit at piece ``position`` of ``context`` (in that context
    when the mechanism depends on it)."""
    units = segment_units(mech, context)
    if not 0 <= position < len(units):
        raise WebError(f"position {position} is outside the text ({len(units)} units)", field="position")
    unit = units[position]
    out = {"unit": unit, "position": position, "contextual": mech.contextual, "epsilon": mech.epsilon}
    reason = mech._policy_of(unit)
    if reason == "digits!":
        out.update(top=[], note="a number is replaced by a uniform integer in 1..1000 (each 0.1 %)")
        return out
    if reason is not None:
        out.update(top=[], note=f"kept unchanged ({reason}); no sampling")
        return out
    i = mech.space.lookup(unit)
    if i < 0 or not mech.input_mask[i]:
        what = {"drop": "dropped", "keep": "kept unchanged",
                "random": "replaced by a uniform unit of the output vocabulary"}[mech.oov]
        out.update(top=[], note=f"not in the vocabulary of {mech.space.name}: {what}")
        return out
    if mech.contextual:  # a per-unit mechanism whose rows depend on the prompt (Settings refuses document-level ones)
        row = mech.transition(unit, context=context, position=position)
    else:
        row = mech.transition(i)
    draws = getattr(mech, "transition_samples", None)
    out.update(top=top_k(np.asarray(row, dtype=np.float64), mech.space.units, k), self_prob=float(row[i]),
               note=f"estimated from {draws:,} draws" if draws else None)
    return out


def build_like(mech: Mechanism, epsilon: float) -> Mechanism:
    """The same mechanism at another ε (itself when ε is unchanged)."""
    s = Settings(mech.name, float(epsilon), mech.space.name, mech.oov)
    return mech if s.epsilon == mech.epsilon else build(s)


def repeated_runs(mech: Mechanism, text: str, n: int, rng: np.random.Generator) -> dict:
    """``n`` independent perturbations: per unit, how often it survives and its outputs."""
    units = segment_units(mech, text)
    outputs = [dict() for _ in units]
    survived = np.zeros(len(units), dtype=np.int64)
    for _ in range(n):
        res = mech.perturb(text, rng=rng)
        for j, rec in enumerate(res.units):
            key = "∅" if rec.output is None else rec.output
            outputs[j][key] = outputs[j].get(key, 0) + 1
            survived[j] += rec.action == "kept" or same_unit(mech, rec.original, rec.output)
    rows = []
    for j, t in enumerate(units):
        seen = sorted(outputs[j].items(), key=lambda kv: (-kv[1], kv[0]))
        rows.append({"original": t, "survived": int(survived[j]), "distinct": len(seen),
                     "outputs": [[u, c] for u, c in seen[:8]]})
    return {"n": n, "units": rows}

