"""Attack base class, observed data and the attack registry (docs/algorithms.md).

An attack sees perturbed units with their sanitized context, knows the
mechanism (public knowledge: its space, ``transition``, domains) and whatever
else the adversary holds (a shadow corpus, a language model). It returns, for
every attacked unit, a ranked list of reconstructions (best first), or
``None`` when it cannot represent that unit at all. The shared scorer
(``dptext.attacks.scoring``) turns that into ASR@1, ASR@K and protection.

Composition follows TextAttack: data (``Observed``), the attack proper
(``Attack.rank``) and the scorer are separate parts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dptext.attacks.scoring import normalize_unit, score
from dptext.errors import DPTextError
from dptext.names import normalise_name

__all__ = ["Attack", "Observed", "attack_class", "get_attack", "list_attacks", "normalize_unit", "observe",
           "observed_from_results", "register_attack"]


TARGETS = ("sampled", "all")


def _field(unit, name: str, default=None):
    """A field of a unit record (``UnitRecord`` or its ``to_dict()`` form)."""
    if isinstance(unit, dict):
        return unit.get(name, default)
    return getattr(unit, name, default)


#: reasons of units that bypass the mechanism's sampler although their output changed
NOT_SAMPLED = ("digits", "oov", "punctuation")


def is_target(unit, targets: str = "sampled") -> bool:
    """Whether an attack targets this unit (docs/algorithms.md).

    ``sampled``: the units the mechanism's sampler drew: action ``perturbed``,
    not a digit run or OOV unit replaced by a uniform draw, and not marked
    non-sensitive (SANTEXT+ records ``sensitive=False`` for its frequent units,
    whichever branch they took; paper 003 attacks the sensitive units only).
    ``all``: every emitted unit but punctuation, including units kept by policy.
    """
    if targets == "all":
        return _field(unit, "output") is not None and _field(unit, "reason") != "punctuation"
    if _field(unit, "action") != "perturbed" or _field(unit, "reason") in NOT_SAMPLED:
        return False
    sensitive = _field(unit, "sensitive")
    return True if sensitive is None else bool(sensitive)


@dataclass
class Observed:
    """Sanitized sentences with their ground truth, flattened over attacked units.

    ``outputs[s]`` are the units of sanitized sentence ``s`` in order (dropped
    units removed) and ``ws[s]`` their leading whitespace; ``originals[s]`` the
    private unit behind each output. Target ``t`` is output ``pos[t]`` of
    sentence ``sent[t]``; ``observed[t]`` / ``truth[t]`` are its perturbed and
    original unit. ``sources[s]`` is the private text of sentence ``s`` and
    ``piece_pos[s][p]`` the piece index of output ``p`` in it (what a
    contextual mechanism's row is conditioned on); ``excluded`` counts units the
    mechanism changed that are not targets (e.g. SANTEXT+'s non-sensitive units).
    """

    outputs: list[list[str]]
    originals: list[list[str]]
    ws: list[list[str]]
    sent: np.ndarray
    pos: np.ndarray
    dropped: int = 0
    sources: list[str] | None = None
    piece_pos: list[list[int]] | None = None
    excluded: int = 0
    targets: str = "sampled"

    @property
    def observed(self) -> list[str]:
        return [self.outputs[s][p] for s, p in zip(self.sent.tolist(), self.pos.tolist())]

    @property
    def truth(self) -> list[str]:
        return [self.originals[s][p] for s, p in zip(self.sent.tolist(), self.pos.tolist())]

    @property
    def n_targets(self) -> int:
        return len(self.sent)

    def text(self, s: int, replace: dict[int, str] | None = None) -> str:
        """Sanitized sentence ``s`` as text, with ``replace[pos]`` substituted."""
        outs = self.outputs[s]
        if replace:
            outs = [replace.get(i, u) for i, u in enumerate(outs)]
        return "".join(w + u for w, u in zip(self.ws[s], outs)).strip()

    def original_text(self, s: int) -> str:
        return "".join(w + u for w, u in zip(self.ws[s], self.originals[s])).strip()


def observed_from_results(results, *, targets: str = "sampled", max_targets: int | None = None) -> Observed:
    """What an attacker sees in already perturbed texts (an iterable of ``PerturbResult``).

    ``targets`` picks the attacked units (:func:`is_target`). Iteration stops
    once ``max_targets`` targets are collected.
    """
    if targets not in TARGETS:
        raise DPTextError(f"unknown targets {targets!r}; choose {' or '.join(TARGETS)}")
    outputs, originals, wss, sent, pos, sources, piece_pos = [], [], [], [], [], [], []
    dropped = excluded = 0
    for res in results:
        outs, origs, ws, where = [], [], [], []
        units = res.units if hasattr(res, "units") else res["units"]
        text = []
        for i, r in enumerate(units):
            original, output = _field(r, "original"), _field(r, "output")
            text.append((_field(r, "ws", "") or "") + original)
            if output is None:
                dropped += 1
                continue
            if is_target(r, targets):
                sent.append(len(outputs))
                pos.append(len(outs))
            elif _field(r, "action") == "perturbed":
                excluded += 1
            outs.append(output)
            origs.append(original)
            ws.append(_field(r, "ws", "") or "")
            where.append(i)
        outputs.append(outs)
        originals.append(origs)
        wss.append(ws)
        sources.append("".join(text))
        piece_pos.append(where)
        if max_targets is not None and len(sent) >= max_targets:
            break
    n = len(sent) if max_targets is None else min(len(sent), int(max_targets))
    return Observed(outputs, originals, wss, np.asarray(sent[:n], dtype=np.int64),
                    np.asarray(pos[:n], dtype=np.int64), dropped, sources, piece_pos, excluded, targets)


def observe(mechanism, sentences, *, rng: np.random.Generator | None = None, repeats: int = 1,
            targets: str = "sampled", max_targets: int | None = None, progress=None,
            description: str | None = None) -> Observed:
    """Perturb ``sentences`` (``repeats`` times each) and collect what an attacker sees.

    ``progress``: a counted task ``description`` (sentences perturbed / sentences × repeats), advanced after
    each sentence; when ``max_targets`` stops the work early its total becomes the number done."""
    if targets not in TARGETS:
        raise DPTextError(f"unknown targets {targets!r}; choose {' or '.join(TARGETS)}")
    rng = rng or mechanism.rng
    sentences = list(sentences)
    total = len(sentences) * int(repeats)
    tid = progress.add_task(description or f"perturbing {total} sentences with {mechanism.name}",
                            total=total) if progress is not None else None
    done = [0]

    def results():
        for text in sentences:
            for _ in range(int(repeats)):
                res = mechanism.perturb(text, rng=rng)
                done[0] += 1
                if tid is not None:
                    progress.advance(tid, 1)  # counted before the consumer may stop at max_targets
                yield res

    obs = observed_from_results(results(), targets=targets, max_targets=max_targets)
    if tid is not None and done[0] < total:
        progress.update(tid, total=done[0], completed=done[0])  # stopped early: the task is complete
    return obs


Ranking = list  # list[list[str] | None], one entry per attacked unit, best first


class Attack(ABC):
    """Base of every reconstruction attack. Options are keyword-only.

    ``fit(shadow)`` does the one-time set-up (priors, tables, detectors) and
    records its duration in ``setup_seconds``; ``rank(observed)`` returns the
    ranked reconstructions; ``evaluate(observed)`` scores them.
    """

    name: ClassVar[str] = ""
    needs_shadow: ClassVar[bool] = False
    #: a bound uses the true private frequencies (not an attack an adversary can run)
    is_bound: ClassVar[bool] = False
    #: ``fit`` needs the private corpus (the bounds' prior)
    needs_private: ClassVar[bool] = False
    #: the keyword option that takes a language model (``dptext attack --model``); None: the attack uses none
    model_option: ClassVar[str | None] = None

    def __init__(self, mechanism, *, k: int = 5, progress=None) -> None:
        if int(k) < 1:
            raise DPTextError(f"invalid k {k}: must be >= 1")
        self.mechanism = mechanism
        self.space = mechanism.space
        self.k = int(k)
        self.progress = progress
        self.setup_seconds = 0.0
        self.fitted = False

    def fit(self, shadow=None, *, private=None, rng: np.random.Generator | None = None) -> "Attack":
        """One-time set-up. ``private``: the private corpus, used only by bounds (``needs_private``)."""
        import time

        if self.needs_shadow and not shadow:
            raise DPTextError(f"attack {self.name!r} needs a shadow corpus (--shadow FILE)")
        if self.needs_private and not private:
            raise DPTextError(f"bound {self.name!r} needs the private corpus (its unit frequencies are the prior)")
        self.private = list(private) if private else []
        t0 = time.perf_counter()
        self._fit(list(shadow) if shadow else [], rng or np.random.default_rng())
        self.setup_seconds = time.perf_counter() - t0
        self.fitted = True
        return self

    def _fit(self, shadow: list[str], rng: np.random.Generator) -> None:
        """One-time set-up from a shadow corpus (default: nothing)."""

    @abstractmethod
    def rank(self, obs: Observed) -> Ranking:
        """Ranked reconstructions per attacked unit (``None`` = cannot represent it)."""

    def evaluate(self, obs: Observed, *, k: int | None = None):
        if not self.fitted:
            self.fit()
        ranking = self.rank(obs)
        report = score(obs.truth, ranking, k=k or self.k)
        report.attack = self.name
        report.details.update(self.details(obs, ranking))
        report.details["dropped_units"] = obs.dropped
        report.details["targets"] = obs.targets
        report.details["non_target_units"] = obs.excluded
        report.details["setup_seconds"] = round(self.setup_seconds, 3)
        return report

    def details(self, obs: Observed, ranking: Ranking) -> dict:
        """Extra numbers for the report (Rouge-L, MRR, ...)."""
        return {}

    @property
    def unit_array(self) -> np.ndarray:
        """The space's units as an object array (for vectorised gathers)."""
        if getattr(self, "_unit_array", None) is None:
            self._unit_array = np.asarray(self.space.units, dtype=object)
        return self._unit_array

    def settings(self) -> dict:
        return {"attack": self.name, "k": self.k, **self.mechanism.settings()}


ATTACKS: dict[str, type] = {}


def register_attack(name: str):
    """Register an attack class under ``name``, spelled as :func:`normalise_name` spells mechanism names."""
    key = normalise_name(name)

    def deco(cls):
        cls.name = key
        ATTACKS[key] = cls
        return cls

    return deco


def attack_class(name) -> type:
    """The registered attack class for ``name`` (``"Bayes_Bound"`` finds ``bayes-bound``); unknown: DPTextError."""
    key = normalise_name(name)
    if key not in ATTACKS:
        raise DPTextError(f"unknown attack {name!r}; known attacks: {', '.join(sorted(ATTACKS))}")
    return ATTACKS[key]


def get_attack(name: str, mechanism, **kwargs) -> Attack:
    return attack_class(name)(mechanism, **kwargs)


def list_attacks() -> list[str]:
    return sorted(ATTACKS)
