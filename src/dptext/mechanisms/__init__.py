"""Text mechanisms (docs/algorithms.md): one module per mechanism, registered by name."""

from dptext.mechanisms.base import Mechanism, PerturbResult, PrivacyClaim, UnitRecord
from dptext.mechanisms.registry import MECHANISMS, list_mechanisms, register
from dptext.mechanisms.spec import MechanismSpec, get_mechanism

# importing a module registers its mechanisms; modules of this package only
import importlib as _importlib

for _mod in ("rantext", "santext", "custext", "cape", "mappers", "stencil", "noise", "dp_prompt"):
    try:
        _importlib.import_module(f"dptext.mechanisms.{_mod}")
    except ModuleNotFoundError as _exc:  # a module not written yet
        if _exc.name != f"dptext.mechanisms.{_mod}":
            raise

__all__ = ["Mechanism", "PerturbResult", "PrivacyClaim", "UnitRecord", "MECHANISMS",
           "get_mechanism", "list_mechanisms", "register", "MechanismSpec"]
