"""The bench's own adapter registry: ``(kind, name) -> callable`` (kind ``metric`` or ``attack``)."""

from __future__ import annotations

from typing import Callable

from dptext.names import normalise_name

MEASURES: dict[tuple[str, str], Callable] = {}


def norm(name: str) -> str:
    """Registry key of a metric/attack name: the name as ``normalise_name`` spells it (the one rule for mechanism
    and attack names), then ``-`` as ``_``, so that the key is also the name of a module attribute."""
    return normalise_name(name).replace("-", "_")


def register_measure(name: str, kind: str = "metric"):
    """Register a bench adapter ``fn(**inputs) -> number | dict | list`` under ``kind``/``name``."""
    if kind not in ("metric", "attack"):
        raise ValueError(f"kind must be 'metric' or 'attack', not {kind!r}")

    def deco(fn):
        MEASURES[(kind, norm(name))] = fn
        return fn

    return deco
