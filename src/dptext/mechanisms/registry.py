"""Name -> mechanism class (a small registry in the style of Opacus' accountants)."""

from __future__ import annotations

from dptext.errors import DPTextError

MECHANISMS: dict[str, type] = {}


def register(name: str):
    def deco(cls):
        cls.name = name
        MECHANISMS[name] = cls
        return cls

    return deco


def get_mechanism(name: str, **kwargs):
    """Instantiate a registered mechanism, e.g. ``get_mechanism("rantext", epsilon=3)``."""
    key = name.lower().replace("_", "-")
    if key not in MECHANISMS:
        raise DPTextError(f"unknown mechanism {name!r}; known mechanisms: {', '.join(sorted(MECHANISMS))}")
    try:
        return MECHANISMS[key](**kwargs)
    except TypeError as exc:  # a parameter the mechanism does not take
        if "unexpected keyword argument" in str(exc):
            bad = str(exc).rsplit("argument", 1)[-1].strip()
            raise DPTextError(f"mechanism {key!r} takes no parameter {bad}") from None
        raise


def list_mechanisms() -> list[str]:
    return sorted(MECHANISMS)
