"""Per-document sanitization with one independent random stream per document.

Stream rule (what makes runs reproducible across engines and worker counts):
the run has one root ``numpy.random.SeedSequence`` (``--seed N``, or OS
entropy drawn once by the driver when no seed is given). Records are grouped
into fixed *stream blocks* of :data:`STREAM_BLOCK` consecutive record
positions (0-based, counting malformed records too): block ``b`` holds
records ``[b·B, (b+1)·B)`` and draws all its noise, document after document
in record order, from

    Generator(PCG64(SeedSequence(root_entropy, spawn_key=(b,))))

which is exactly the ``b``-th child of ``SeedSequence(root).spawn(...)``.
The documents of a block are perturbed in one vectorised call
(:meth:`~dptext.mechanisms.base.Mechanism.perturb_many`). Shards are cut at
block boundaries, so a block is never split between workers: the output
depends only on (seed, the record positions, the texts), never on which
worker, shard or engine handled it; and no two blocks (hence no two workers)
share a stream, while documents inside a block take successive draws of it,
so a repeated document gets independent perturbations.
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

    def build(self) -> "DocSanitizer":
        """The per-document sanitizer (the space's cached arrays are memory-mapped: every worker on a
        machine shares one copy of their pages)."""
        if self.policy is not None:
            from dptext.pipeline import Sanitizer
            from dptext.privacy.policy import get_policy

            kw = dict(self.policy)
            return DocSanitizer(None, Sanitizer(self.spec, policy=get_policy(kw.pop("name"), **kw)))
        mech = self.spec.build()
        if mech.has_keep_rule:  # under `all` too, a keep rule never keeps a detected entity (policy.plan_for)
            from dptext.pipeline import Sanitizer

            return DocSanitizer(None, Sanitizer(mech))
        return DocSanitizer(mech, None)


STREAM_BLOCK = 64  # records per random stream (and the unit of work of one vectorised call)


class DocSanitizer:
    """Documents in, (text, privacy report, unit count) out; through the core when a policy is set."""

    def __init__(self, mech, sanitizer):
        self.mech, self.sanitizer = mech, sanitizer

    def __call__(self, text: str, rng) -> tuple[str, dict, int]:
        return self.many([text], rng)[0]

    def many(self, texts: list[str], rng) -> list[tuple[str, dict, int]]:
        """The texts in order, all noise from ``rng`` (one vectorised call without a policy)."""
        if self.sanitizer is None:
            return [(r.text, r.privacy, len(r._pieces)) for r in self.mech.perturb_many(texts, rng=rng)]
        from dptext.pipeline import Segment

        out = []
        for text in texts:
            o = self.sanitizer.sanitize([Segment(text, private=True)], rng=rng)
            units = o.report.get("units", {})
            out.append((o.texts[0], o.report, int(sum(units.values())) if isinstance(units, dict) else 0))
        return out


def root_entropy(seed: int | None) -> int:
    """The run's root entropy: ``seed`` itself, or fresh OS entropy (never written anywhere)."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if int(seed) < 0:
        raise DPTextError(f"invalid --seed {seed}: must be >= 0")
    return int(seed)


def block_rng(entropy: int, block: int) -> np.random.Generator:
    """The independent stream of stream block ``block`` (the ``block``-th ``SeedSequence.spawn`` child)."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(int(block),)))


def block_of(index: int) -> int:
    return int(index) // STREAM_BLOCK


@dataclass
class DocResult:
    index: int
    text: str | None  # None when the document was rejected
    report: dict | None
    units: int
    error: str | None = None


def _reject(index: int, text) -> DocResult | None:
    if not isinstance(text, str):
        return DocResult(index, None, None, 0, f"text is {type(text).__name__}, not a string")
    return None


def sanitize_block(doc: DocSanitizer, entropy: int, indices: list[int], texts: list) -> list[DocResult]:
    """One stream block's documents (in record order) with the block's stream.

    A user-level error (bad text, too long) rejects its document without output; the block is then
    redone one document at a time from a fresh copy of its stream, so the result is still a function
    of the block's texts alone."""
    out: list[DocResult | None] = [_reject(i, t) for i, t in zip(indices, texts)]
    todo = [k for k, r in enumerate(out) if r is None]
    try:
        done = doc.many([texts[k] for k in todo], block_rng(entropy, block_of(indices[0])))
        for k, (text, report, units) in zip(todo, done):
            out[k] = DocResult(indices[k], text, report, units)
    except DPTextError:
        rng = block_rng(entropy, block_of(indices[0]))
        for k in todo:
            try:
                text, report, units = doc(texts[k], rng)
                out[k] = DocResult(indices[k], text, report, units)
            except DPTextError as exc:
                out[k] = DocResult(indices[k], None, None, 0, str(exc))
    return out


def sanitize_shard(doc: DocSanitizer, entropy: int, indices, texts) -> list[DocResult]:
    """A shard is whole stream blocks (``engines.shards`` cuts at block boundaries)."""
    out: list[DocResult] = []
    lo = 0
    indices = [int(i) for i in indices]
    while lo < len(indices):
        hi = lo + 1
        while hi < len(indices) and block_of(indices[hi]) == block_of(indices[lo]):
            hi += 1
        out.extend(sanitize_block(doc, entropy, indices[lo:hi], texts[lo:hi]))
        lo = hi
    return out
