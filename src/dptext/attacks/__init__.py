"""Reconstruction attacks (docs/algorithms.md): one module per attack, registered by name.

``get_attack(name, mechanism, **options).fit(shadow).evaluate(observe(mechanism, private))``
returns an ``AttackScore`` (ASR@1, ASR@K, protection level, unrepresentable units).
"""

from dptext.attacks.base import (ATTACKS, Attack, Observed, attack_class, get_attack, list_attacks, normalize_unit,
                                 observe, register_attack)
from dptext.attacks.scoring import AttackScore, rouge_l_f1, score

# importing a module registers its attacks
from dptext.attacks import bayes, contextual, frequency, knn, llm_inference, masked, oracle  # noqa: E402,F401

__all__ = ["ATTACKS", "Attack", "AttackScore", "Observed", "attack_class", "get_attack", "list_attacks", "normalize_unit",
           "observe", "register_attack", "rouge_l_f1", "score"]
