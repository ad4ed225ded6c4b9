"""Per-document sanitization with one independent random stream per document.

Stream rule (what makes runs reproducible across engines and worker counts):
the run has one root ``numpy.random.SeedSequence`` (``--seed N``, or OS
entropy drawn once by the driver when no seed is given). Document number
``i`` of the input (0-based record position, counting malformed records too)
draws all its noise from

    Generator(PCG64(SeedSequence(root_entropy, spawn_key=(i,))))

which is exactly the ``i``-th child of ``SeedSequence(root).spawn(...)``.
A document's output therefore depends only on (seed, its position, its
text), never on which worker, shard or engine handled it; and no two
documents (hence no two workers) ever share a stream, so a repeated document
gets independent perturbations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.spec import MechanismSpec


@dataclass(frozen=True)
class BatchJob:
    """What every worker needs (picklable, sent once per worker): the mechanism spec and the policy settings.

    ``policy`` is None (every unit private) or the keyword arguments of
    ``dptext.privacy.policy.get_policy`` (``{"name": "entities", ...}``): a policy holds models that do not
    travel between processes, so each worker builds its own from the settings.
    """

    spec: MechanismSpec
    policy: dict | None = None

    @property
    def space_name(self) -> str:
        return self.spec.space_name

    def build(self, *, mmap: bool = True) -> "DocSanitizer":
        """The per-document sanitizer, on a memory-mapped private copy of the space (``mmap=True``)."""
        if self.policy is not None:
            from dptext.pipeline import Sanitizer
            from dptext.privacy.policy import get_policy

            kw = dict(self.policy)
            return DocSanitizer(None, Sanitizer(self.spec, policy=get_policy(kw.pop("name"), **kw)))
        if not mmap:
            return DocSanitizer(self.spec.build(), None)
        from dptext.batch.mmap_space import load_space_mmap

        return DocSanitizer(self.spec.build(space=load_space_mmap(self.space_name)), None)


class DocSanitizer:
    """One document in, (text, privacy report, unit count) out; through the core when a policy is set."""

    def __init__(self, mech, sanitizer):
        self.mech, self.sanitizer = mech, sanitizer

    def __call__(self, text: str, rng) -> tuple[str, dict, int]:
        if self.sanitizer is None:
            res = self.mech.perturb(text, rng=rng)
            return res.text, res.privacy, len(res.units)
        from dptext.pipeline import Segment

        out = self.sanitizer.sanitize([Segment(text, private=True)], rng=rng)
        units = out.report.get("units", {})
        return out.texts[0], out.report, int(sum(units.values())) if isinstance(units, dict) else 0


def root_entropy(seed: int | None) -> int:
    """The run's root entropy: ``seed`` itself, or fresh OS entropy (never written anywhere)."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if int(seed) < 0:
        raise DPTextError(f"invalid --seed {seed}: must be >= 0")
    return int(seed)


def document_rng(entropy: int, index: int) -> np.random.Generator:
    """The independent stream of document ``index`` (the ``index``-th ``SeedSequence.spawn`` child)."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(int(index),)))


@dataclass
class DocResult:
    index: int
    text: str | None  # None when the document was rejected
    report: dict | None
    units: int
    error: str | None = None


def sanitize_one(doc: DocSanitizer, entropy: int, index: int, text) -> DocResult:
    """Perturb one document; a user-level error (bad text, too long) rejects it without output."""
    if not isinstance(text, str):
        return DocResult(index, None, None, 0, f"text is {type(text).__name__}, not a string")
    try:
        out, report, units = doc(text, document_rng(entropy, index))
    except DPTextError as exc:
        return DocResult(index, None, None, 0, str(exc))
    return DocResult(index, out, report, units)


def sanitize_shard(doc: DocSanitizer, entropy: int, indices, texts) -> list[DocResult]:
    return [sanitize_one(doc, entropy, int(i), t) for i, t in zip(indices, texts)]
