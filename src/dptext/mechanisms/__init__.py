"""Text mechanisms (docs/algorithms.md): one module per mechanism, registered by name."""

from dptext.mechanisms.base import Mechanism, PerturbResult, PrivacyClaim, UnitRecord
from dptext.mechanisms.registry import MECHANISMS, list_mechanisms, register
from dptext.mechanisms.spec import MechanismSpec, get_mechanism

# importing a module registers its mechanisms (the explicit registry lists them all)
from dptext.mechanisms import cape, custext, dp_prompt, mappers, noise, rantext, santext, stencil  # noqa: E402,F401
# the word-level metric-DP family
from dptext.mechanisms import diffractor, mahalanobis, multivariate, syntf, tem, truncated_gumbel, vickrey  # noqa: E402,F401

__all__ = ["Mechanism", "PerturbResult", "PrivacyClaim", "UnitRecord", "MECHANISMS",
           "get_mechanism", "list_mechanisms", "register", "MechanismSpec"]
