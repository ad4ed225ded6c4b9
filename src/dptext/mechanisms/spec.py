"""Mechanism specs: the one place a mechanism is built from names and settings.

A :class:`MechanismSpec` is what a user writes (a CLI flag set, a proxy config
section, a sweep cell, a batch job): the mechanism's name, ε, the space, the
unit policies and mechanism-specific options. It is validated once, on
construction, and every error is a :class:`~dptext.errors.ParameterError`
naming the setting (``epsilon``, ``options.n_buckets``...), so each front end
can map it to its own flag or field. :meth:`MechanismSpec.build` is the only
code that turns such settings into a mechanism object.

Mechanism-specific options are validated against the parameters the class
declares (``Mechanism.params``: name -> default); a value is coerced to the
type of its default (``"20"`` -> 20 for an ``int`` default) or refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dptext.errors import ParameterError
from dptext.mechanisms.registry import MECHANISMS
from dptext.names import normalise_name

COMMON = ("epsilon", "space", "oov", "digits", "punctuation", "seed")
KEYS = ("mechanism", *COMMON, "options")
LABELS = {"oov": "OOV", "digits": "digits", "punctuation": "punctuation"}
EPSILON_MAX = 10_000.0  # the one upper limit on ε, for every front end (CLI, proxy, playground, sweeps)
CHOICES = {"oov": ("drop", "random", "keep"), "digits": ("random", "keep", "vocab"),
           "punctuation": ("keep", "perturb")}


def spec_epsilon(value) -> float:
    """ε for a spec: a number in (0, :data:`EPSILON_MAX`]; NaN, infinity, 0 and too large each named."""
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise ParameterError("epsilon", f"invalid epsilon {value!r}: must be a number greater than 0") from None
    if eps != eps:
        raise ParameterError("epsilon", "epsilon is NaN (not a number): give a number greater than 0")
    if eps in (float("inf"), float("-inf")):
        raise ParameterError("epsilon", f"epsilon is infinite: give a number greater than 0 and at most "
                                        f"{EPSILON_MAX:g}")
    if eps <= 0:
        raise ParameterError("epsilon", f"epsilon must be greater than 0 (got {eps:g}): at ε = 0 no information "
                                        "at all gets through, which no mechanism here can do")
    if eps > EPSILON_MAX:
        raise ParameterError("epsilon", f"epsilon must be at most {EPSILON_MAX:g} (got {eps:g}): an ε that "
                                        "large protects nothing")
    return eps


def mechanism_class(name) -> type:
    """The registered class for ``name``; an unknown name is a ParameterError listing the known ones."""
    key = normalise_name(name)
    if key not in MECHANISMS:
        raise ParameterError("mechanism", f"unknown mechanism {name!r}; known mechanisms: "
                                          f"{', '.join(sorted(MECHANISMS))}")
    return MECHANISMS[key]


def declared_params(cls) -> dict[str, Any]:
    """Mechanism-specific parameters (name -> default) that ``cls`` and its bases declare in ``params``."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        out.update(vars(klass).get("params", {}))
    return out


def _coerce(name: str, value, default):
    """``value`` converted to the type of ``default`` (bool, int, float); other defaults take anything."""
    kind = type(default)
    if default is None or kind not in (bool, int, float) or isinstance(value, kind) and not (
            kind is int and isinstance(value, bool)):
        return value
    if kind is bool:
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        raise ParameterError(f"options.{name}", f"invalid {name} {value!r}: must be true or false")
    try:
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        return float(value)
    except (TypeError, ValueError):
        what = "an integer" if kind is int else "a number"
        raise ParameterError(f"options.{name}", f"invalid {name} {value!r}: must be {what}") from None


@dataclass(frozen=True)
class MechanismSpec:
    """Validated settings of one mechanism; ``build()`` makes it."""

    mechanism: str
    epsilon: float | None = None
    space: str | None = None
    oov: str = "drop"
    digits: str = "random"
    punctuation: str = "keep"
    seed: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cls = mechanism_class(self.mechanism)
        object.__setattr__(self, "mechanism", cls.name)
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", spec_epsilon(self.epsilon))
        elif getattr(cls, "dp", False) and not set(self.options) & set(getattr(cls, "epsilon_alternatives", ())):
            raise ParameterError("epsilon", f"mechanism {cls.name!r} needs epsilon")
        for name, allowed in CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ParameterError(name, f"unknown {LABELS[name]} policy {value!r}; choose one of {', '.join(allowed)}")
        if self.seed is not None:
            if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
                raise ParameterError("seed", f"invalid seed {self.seed!r}: must be an integer >= 0")
        if self.space is not None and not isinstance(self.space, str):
            raise ParameterError("space", f"invalid space {self.space!r}: give a space name")
        if not isinstance(self.options, Mapping):
            raise ParameterError("options", "mechanism options must be a mapping of name -> value")
        params = declared_params(cls)
        options = {}
        for raw, value in self.options.items():
            name = str(raw).strip().replace("-", "_")
            if name in COMMON:
                raise ParameterError(f"options.{name}", f"{name} is a mechanism setting, not an option")
            if name not in params:
                known = ", ".join(sorted(params)) or "none"
                raise ParameterError(f"options.{name}", f"mechanism {cls.name!r} takes no parameter {name!r} "
                                                        f"(its parameters: {known})")
            options[name] = _coerce(name, value, params[name])
        object.__setattr__(self, "options", options)

    @classmethod
    def from_dict(cls, data: Mapping) -> "MechanismSpec":
        """From a mapping with keys among :data:`KEYS`; an unknown key is an error naming it."""
        if not isinstance(data, Mapping):
            raise ParameterError("mechanism", "a mechanism spec must be a mapping")
        unknown = [k for k in data if k not in KEYS]
        if unknown:
            raise ParameterError(str(unknown[0]), f"unknown mechanism setting {unknown[0]!r}; "
                                                  f"known settings: {', '.join(KEYS)}")
        if "mechanism" not in data:
            raise ParameterError("mechanism", "the mechanism spec names no mechanism")
        return cls(**{k: v for k, v in data.items() if k != "options" or v is not None})

    @property
    def cls(self) -> type:
        return mechanism_class(self.mechanism)

    @property
    def space_name(self) -> str | None:
        """The space this spec uses: the one named, else the mechanism's default."""
        return self.space or getattr(self.cls, "default_space", None)

    def replace(self, **changes) -> "MechanismSpec":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """JSON-safe settings (objects given as options are named by their type)."""
        opts = {k: (v if isinstance(v, (str, int, float, bool, type(None))) else type(v).__name__)
                for k, v in sorted(self.options.items())}
        return {"mechanism": self.mechanism, "epsilon": self.epsilon, "space": self.space, "oov": self.oov,
                "digits": self.digits, "punctuation": self.punctuation, "seed": self.seed, "options": opts}

    def build(self, *, progress=None, space=None):
        """The mechanism object (loads or builds its space on first use).

        ``space``: an already-loaded space object to use instead of loading ``self.space`` (batch
        workers pass a memory-mapped copy); it must be the space this spec names.
        """
        if space is not None and getattr(space, "name", None) != self.space_name:
            raise ParameterError("space", f"space object {getattr(space, 'name', space)!r} is not "
                                          f"{self.space_name!r}, the space of this spec")
        kwargs = {"space": space if space is not None else self.space, "seed": self.seed, "oov": self.oov, "digits": self.digits,
                  "punctuation": self.punctuation, **self.options}
        if self.epsilon is not None:
            kwargs["epsilon"] = self.epsilon
        if progress is not None:
            kwargs["progress"] = progress
        return self.cls(**kwargs)


def get_mechanism(name: str, *, progress=None, **kwargs):
    """Instantiate a registered mechanism, e.g. ``get_mechanism("rantext", epsilon=3)``.

    ``epsilon``, ``space``, ``oov``, ``digits``, ``punctuation`` and ``seed`` are the common
    settings; every other keyword is a mechanism-specific option (see ``Mechanism.params``).
    """
    common = {k: kwargs.pop(k) for k in COMMON if k in kwargs}
    common = {k: v for k, v in common.items() if v is not None or k == "epsilon"}
    space = common.get("space")
    if space is not None and not isinstance(space, str):  # an already-loaded space object
        common["space"] = getattr(space, "name", space)
        return MechanismSpec(mechanism=name, **common, options=kwargs).build(progress=progress, space=space)
    return MechanismSpec(mechanism=name, **common, options=kwargs).build(progress=progress)
