"""One attack against one mechanism on private (and shadow) sentences: the library side of ``dptext attack``.

``run_attack`` builds nothing from strings but the attack; the caller passes
a built mechanism. Stages (fitting, perturbing, attacking) are reported on
``progress`` (see ``dptext.progress``) so long work is never silent.
"""

from __future__ import annotations

import time

import numpy as np

from dptext.attacks.base import TARGETS, get_attack, observe
from dptext.errors import DPTextError


def _stage(progress, what: str):
    from dptext.progress import stage

    return stage(progress, what)


def run_attack(mechanism, attack: str, private: list[str], shadow: list[str] | None = None, *, k: int = 5,
               n_units: int | None = None, targets: str = "sampled", rng: np.random.Generator | None = None,
               options: dict | None = None, progress=None) -> dict:
    """Fit ``attack`` (shadow corpus; bounds also get ``private``), perturb ``private``, score; a report dict."""
    if targets not in TARGETS:
        raise DPTextError(f"unknown targets {targets!r}; choose {' or '.join(TARGETS)}")
    rng = rng or np.random.default_rng()
    att = get_attack(attack, mechanism, k=k, progress=progress, **(options or {}))
    if att.needs_shadow and not shadow:
        raise DPTextError(f"attack {att.name!r} needs a shadow corpus: give --shadow FILE")
    t0 = time.perf_counter()
    with _stage(progress, f"fitting {att.name}" + (f" on {len(shadow)} shadow sentences" if shadow else "")):
        att.fit(shadow, private=private, rng=rng)
    upto = f" (until {n_units} target units)" if n_units else ""
    obs = observe(mechanism, private, rng=rng, max_targets=n_units, targets=targets, progress=progress,
                  description=f"perturbing private sentences with {mechanism.name}{upto}")
    if obs.n_targets == 0:
        raise DPTextError("the mechanism perturbed no unit of the private text; nothing to attack")
    with _stage(progress, f"attacking {obs.n_targets} units"):
        report = att.evaluate(obs, k=k)
    mech_eps = getattr(mechanism, "epsilon", None)  # None for mechanisms without a privacy parameter
    return {**report.to_dict(), "mechanism": mechanism.name, "epsilon": mech_eps, "space": mechanism.space.name,
            "bound": att.is_bound, "seconds": round(time.perf_counter() - t0, 3)}
