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

from dataclasses import dataclass, field

import numpy as np

from dptext.errors import DPTextError


@dataclass(frozen=True)
class MechanismSpec:
    """Everything a worker needs to rebuild the mechanism (picklable, sent once per worker)."""

    name: str
    epsilon: float
    space: str | None = None
    options: dict = field(default_factory=dict)  # oov=, digits=, ... passed to the mechanism

    def space_name(self) -> str:
        from dptext.mechanisms import MECHANISMS

        key = self.name.lower().replace("_", "-")
        if key not in MECHANISMS:
            raise DPTextError(f"unknown mechanism {self.name!r}; known mechanisms: {', '.join(sorted(MECHANISMS))}")
        return self.space or MECHANISMS[key].default_space

    def build(self, *, mmap: bool = True):
        """The mechanism, on a memory-mapped private copy of its space (``mmap=True``) or the shared one."""
        from dptext.batch.mmap_space import load_space_mmap
        from dptext.mechanisms import get_mechanism

        space = load_space_mmap(self.space_name()) if mmap else self.space_name()
        return get_mechanism(self.name, epsilon=self.epsilon, space=space, **self.options)


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


def sanitize_one(mech, entropy: int, index: int, text) -> DocResult:
    """Perturb one document; a user-level error (bad text, too long) rejects it without output."""
    if not isinstance(text, str):
        return DocResult(index, None, None, 0, f"text is {type(text).__name__}, not a string")
    try:
        res = mech.perturb(text, rng=document_rng(entropy, index))
    except DPTextError as exc:
        return DocResult(index, None, None, 0, str(exc))
    return DocResult(index, res.text, res.privacy, len(res.units))


def warm_rows(mech, texts) -> None:
    """Compute a shard's per-unit rows in one batch before its documents are perturbed.

    Mechanisms that keep a :class:`~dptext.mechanisms._rows.RowStore` (RANTEXT) compute the
    rows of units they have not met yet on demand, document by document: a few rows per
    call, each call one pass over the whole embedding matrix. Asking for all the shard's
    units at once is several times faster on a cold worker, and changes no output (rows
    are a pure function of the unit; randomness only comes from the document streams).
    """
    store = getattr(mech, "rows", None)
    if store is None or not callable(getattr(store, "slots", None)):
        return
    space = mech.space
    units = [p.text for t in texts if isinstance(t, str) for p in space.segment(t).pieces]
    if not units:
        return
    ids = np.unique(space.lookup_many(units))
    ids = ids[ids >= 0]
    ids = ids[mech.input_mask[ids]]
    cap = int(getattr(store, "capacity", len(ids)))
    for start in range(0, len(ids), cap):
        store.slots(ids[start : start + cap])


def sanitize_shard(mech, entropy: int, indices, texts) -> list[DocResult]:
    try:
        warm_rows(mech, texts)
    except DPTextError:
        pass  # a bad document is rejected (with its reason) by sanitize_one below
    return [sanitize_one(mech, entropy, int(i), t) for i, t in zip(indices, texts)]
