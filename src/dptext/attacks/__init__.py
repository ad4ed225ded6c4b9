"""Reconstruction attacks (SPEC section 3): one module per attack, registered by name.

``get_attack(name, mechanism, **options).fit(shadow).evaluate(observe(mechanism, private))``
returns an ``AttackScore`` (ASR@1, ASR@K, protection level, unrepresentable units).
"""

import importlib as _importlib

from dptext.attacks.base import ATTACKS, Attack, Observed, get_attack, list_attacks, normalize_unit, observe, register_attack
from dptext.attacks.scoring import AttackScore, rouge_l_f1, score

for _mod in ("knn", "bayes", "frequency", "contextual", "masked", "llm_inference", "oracle"):
    try:
        _importlib.import_module(f"dptext.attacks.{_mod}")
    except ModuleNotFoundError as _exc:  # an attack module not written yet
        if _exc.name != f"dptext.attacks.{_mod}":
            raise

__all__ = ["ATTACKS", "Attack", "AttackScore", "Observed", "get_attack", "list_attacks", "normalize_unit",
           "observe", "register_attack", "rouge_l_f1", "score"]
