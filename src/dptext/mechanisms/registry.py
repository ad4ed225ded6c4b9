"""Name -> mechanism class (a small registry in the style of Opacus' accountants).

Building a mechanism from settings goes through :class:`dptext.mechanisms.spec.MechanismSpec`;
:func:`dptext.mechanisms.spec.get_mechanism` is its keyword-argument shorthand.
"""

from __future__ import annotations

MECHANISMS: dict[str, type] = {}


def register(name: str):
    def deco(cls):
        cls.name = name
        MECHANISMS[name] = cls
        return cls

    return deco


def list_mechanisms() -> list[str]:
    return sorted(MECHANISMS)
