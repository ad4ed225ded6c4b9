"""What a cell works on: its dataset split and its mechanism, resolved by name.

Datasets come from the ``dptext.data`` registry (a sweep may also name a
user file: ``{name: mine, path: docs.txt}``). Mechanisms come from
``dptext.mechanisms``. A name that is not registered raises ``MissingPart``,
which the sweep records as a skipped cell instead of failing the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from dptext.errors import DPTextError


class MissingPart(DPTextError):
    """A mechanism, dataset, metric or attack the sweep names is not available (yet)."""


@dataclass
class DocSet:
    """The documents a cell perturbs plus what the metrics and attacks may use."""

    name: str
    documents: list[str]
    references: list[str] | None = None
    labels: list | None = None
    shadow: list[str] | None = None
    full: object = None  # the whole dptext.data.Dataset (train/test splits for classifiers)
    split_seed: int = 0


@lru_cache(maxsize=32)
def _load_dataset(name: str, params_json: str) -> DocSet:
    """Dataset params: ``path`` (a .txt/.jsonl file instead of a registered name), ``split``
    (``private`` by default; ``all`` = every item), ``split_seed`` (0), ``limit`` (first N items),
    ``shadow_split`` (``shadow``; the adversary's corpus, ``null`` for none), ``shadow_limit``."""
    params = json.loads(params_json)
    try:
        from dptext.data import get_dataset
    except ImportError:
        raise MissingPart(f"dataset {name!r}: the dptext.data module is not available") from None
    limit = params.pop("limit", None)
    split = params.pop("split", "private")
    seed = int(params.pop("split_seed", 0))
    shadow_split = params.pop("shadow_split", "shadow")
    shadow_limit = params.pop("shadow_limit", None)
    path = params.pop("path", None)
    if params:
        raise DPTextError(f"dataset {name!r}: unknown option(s) {', '.join(sorted(params))}")
    ds = get_dataset(path or name)
    part = ds if split == "all" else ds.split(split, seed=seed)
    if limit is not None:
        part = part.take(range(min(int(limit), len(part))))
    if not len(part):
        raise DPTextError(f"dataset {name!r} split {split!r} is empty")
    shadow = None
    if shadow_split and split != "all":
        sh = ds.split(shadow_split, seed=seed)
        if shadow_limit is not None:
            sh = sh.take(range(min(int(shadow_limit), len(sh))))
        shadow = sh.corpus()
    return DocSet(name=name, documents=list(part.texts),
                  references=list(part.references) if part.references is not None else None,
                  labels=list(part.labels) if part.labels is not None else None,
                  shadow=shadow, full=ds, split_seed=seed)


def load_docs(name: str, params: dict) -> DocSet:
    return _load_dataset(name, json.dumps(params, sort_keys=True))


# ----- mechanisms -----------------------------------------------------------------------------------
_SETTINGS = ("space", "oov", "digits", "punctuation", "seed")


def mechanism_spec(name: str, epsilon: float | None, params: dict):
    """The ``MechanismSpec`` of a sweep's mechanism entry: ``params`` holds the common settings
    (space, oov, digits, punctuation, seed) and mechanism-specific options. Invalid settings raise
    ``ParameterError`` naming the setting."""
    from dptext.mechanisms.spec import MechanismSpec

    params = dict(params)
    settings = {k: params.pop(k) for k in _SETTINGS if k in params}
    return MechanismSpec(mechanism=name, epsilon=epsilon, options=params, **settings)


@lru_cache(maxsize=16)
def _mechanism(name: str, epsilon: float | None, params_json: str):
    from dptext.mechanisms.registry import MECHANISMS
    from dptext.names import normalise_name

    if normalise_name(name) not in MECHANISMS:
        raise MissingPart(f"mechanism {name!r} is not registered")
    return mechanism_spec(name, epsilon, json.loads(params_json)).build()


def make_mechanism(name: str, epsilon: float | None, params: dict):
    """A mechanism instance, shared by the cells of one process that differ only by seed.

    Cells pass their own ``numpy.random.Generator`` to every call, so sharing
    the instance shares its precomputed tables, never its random stream.
    """
    return _mechanism(name, epsilon, json.dumps(params, sort_keys=True))
