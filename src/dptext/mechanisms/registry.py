"""Name -> mechanism class (a small registry in the style of Opacus' accountants).

Building a mechanism from settings goes through :class:`dptext.mechanisms.spec.MechanismSpec`;
:func:`get_mechanism` is its keyword-argument shorthand.
"""

from __future__ import annotations

MECHANISMS: dict[str, type] = {}


def register(name: str):
    def deco(cls):
        cls.name = name
        MECHANISMS[name] = cls
        return cls

    return deco


def get_mechanism(name: str, *, progress=None, **kwargs):
    """Instantiate a registered mechanism, e.g. ``get_mechanism("rantext", epsilon=3)``.

    ``epsilon``, ``space``, ``oov``, ``digits``, ``punctuation`` and ``seed`` are the common
    settings; every other keyword is a mechanism-specific option (see ``Mechanism.params``).
    """
    from dptext.mechanisms.spec import COMMON, MechanismSpec

    common = {k: kwargs.pop(k) for k in COMMON if k in kwargs}
    common = {k: v for k, v in common.items() if v is not None or k == "epsilon"}
    return MechanismSpec(mechanism=name, **common, options=kwargs).build(progress=progress)


def list_mechanisms() -> list[str]:
    return sorted(MECHANISMS)
