"""How a cell calls metrics and attacks it only knows by name.

A metric or attack is looked up, in order, in the bench's own adapter
registry (``register_measure``), then in the ``dptext.metrics`` /
``dptext.attacks`` registries. Whatever is found (a function, or a class
whose instance has ``evaluate`` / ``score`` / ``run`` / ``compute`` /
``attack`` / ``__call__``) is called with its parameters filled *by name*:
first from the sweep's ``params`` for it, then from the cell context
(``CONTEXT_KEYS``). A new metric therefore plugs in by declaring the inputs it
needs, with no change here. Its result (a number, a dict, a dataclass, an
object with ``to_dict()``, or a list of numbers for a distribution) becomes
columns ``<kind>.<label>[.<field>]`` of the cell's row.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import zlib
from functools import cached_property

import numpy as np

from dptext.bench.inputs import DocSet, MissingPart
from dptext.bench.registry import MEASURES, norm, register_measure  # noqa: F401 (re-exported)
from dptext.errors import DPTextError

_METHODS = ("evaluate", "score", "run", "compute", "attack", "__call__")
MAX_LIST = 10_000  # longest distribution kept in a row
_norm = norm


class _Lazy:
    """A context input computed only when a measure asks for it."""

    def __init__(self, fn):
        self.fn = fn


class CellContext:
    """The inputs a cell offers to metrics and attacks (computed lazily, once)."""

    def __init__(self, cell: dict, mechanism, docs: DocSet, results: list):
        self.cell, self.mechanism, self.docs, self.results = cell, mechanism, docs, results

    def rng(self, label: str) -> np.random.Generator:
        """An independent stream per (seed, measure label), reproducible for a fixed seed."""
        return np.random.default_rng(np.random.SeedSequence(self.cell["seed"], spawn_key=(zlib.crc32(label.encode()),)))

    @cached_property
    def _pairs(self) -> list[tuple[str, str | None]]:
        """(original, output) for every unit but punctuation kept by policy (output None = dropped)."""
        return [(u.original, u.output) for r in self.results for u in r.units if u.reason != "punctuation"]

    @cached_property
    def _sampled_pairs(self) -> list[tuple[str, str]]:
        """(original, output) for units that reached the mechanism's sampler (any branch, e.g. both of
        SANTEXT+'s), as InferDPT's Tables IV-V count them."""
        from dptext.attacks.base import NOT_SAMPLED

        return [(u.original, u.output) for r in self.results for u in r.units
                if u.action == "perturbed" and u.reason not in NOT_SAMPLED]

    @cached_property
    def _units(self) -> list[str]:
        """Distinct in-domain vocabulary units of the documents, in order of first occurrence."""
        seen = dict.fromkeys(a for a, _ in self._sampled_pairs)
        return list(seen)

    def observed(self, options: dict | None = None):
        """What an attacker sees, as a ``dptext.attacks.Observed``.

        Built from this cell's own perturbation (the metrics and the attacks
        judge the same outputs, and a slow mechanism runs once); ``targets`` and
        ``max_targets`` select from it; ``repeats`` draws ``observe`` anew.
        """
        options = dict(options or {})
        unknown = set(options) - {"targets", "max_targets", "repeats"}
        if unknown:
            raise DPTextError(f"unknown observe option(s) {', '.join(sorted(unknown))}; "
                              "allowed: targets, max_targets, repeats")
        key = repr(sorted(options.items()))
        cache = self.__dict__.setdefault("_observed", {})
        if key not in cache:
            from dptext.attacks.base import observe, observed_from_results

            if options.get("repeats", 1) != 1:
                cache[key] = observe(self.mechanism, self.docs.documents, rng=self.rng(f"observe{key}"),
                                     **options)
            else:
                options.pop("repeats", None)
                cache[key] = observed_from_results(self.results, **options)
        return cache[key]

    def values(self, observe_options: dict | None = None) -> dict:
        """Context inputs by name; callables are evaluated only when a measure asks for them."""
        m = self.mechanism
        return {
            "cell": self.cell,
            "mechanism": m,
            "space": m.space,
            "epsilon": self.cell["epsilon"],
            "seed": self.cell["seed"],
            "dataset": self.docs,
            "documents": self.docs.documents,
            "private": self.docs.documents,
            "texts": self.docs.documents,
            "sentences": self.docs.documents,
            "references": self.docs.references,
            "labels": self.docs.labels,
            "shadow": self.docs.shadow,
            "results": self.results,
            "perturbed": _Lazy(lambda: [r.text for r in self.results]),
            "perturbed_texts": _Lazy(lambda: [r.text for r in self.results]),
            "pairs": _Lazy(lambda: self._pairs),
            "sampled_pairs": _Lazy(lambda: self._sampled_pairs),
            "units": _Lazy(lambda: self._units),
            "original_units": _Lazy(lambda: [a for a, _ in self._sampled_pairs]),
            "perturbed_units": _Lazy(lambda: [b for _, b in self._sampled_pairs]),
            "observed": _Lazy(lambda: self.observed(observe_options)),
            "obs": _Lazy(lambda: self.observed(observe_options)),
        }


CONTEXT_KEYS = ("cell", "mechanism", "space", "epsilon", "seed", "rng", "dataset", "documents", "private", "texts",
                "sentences", "references", "labels", "shadow", "results", "perturbed", "perturbed_texts", "pairs",
                "sampled_pairs", "units", "original_units", "perturbed_units", "observed", "obs")


def _lookup_module(kind: str, name: str):
    mod_name = "dptext.metrics" if kind == "metric" else "dptext.attacks"
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError:
        return None
    key = _norm(name)
    for reg in ("METRICS", "ATTACKS", "REGISTRY"):
        table = getattr(mod, reg, None)
        if isinstance(table, dict):
            for k, v in table.items():
                if _norm(k) == key:
                    return v
    return getattr(mod, key, None) if callable(getattr(mod, key, None)) else None


def resolve(kind: str, name: str):
    """The callable behind a metric/attack name, or ``MissingPart``."""
    fn = MEASURES.get((kind, _norm(name))) or _lookup_module(kind, name)
    if fn is None:
        raise MissingPart(f"{kind} {name!r} is not registered")
    return fn


def _fill(fn, params: dict, ctx_values: dict, rng_factory, what: str) -> tuple[dict, set]:
    """Keyword arguments for ``fn`` from ``params`` then the context; also the params used."""
    sig = inspect.signature(fn)
    kwargs, used, var_kw = {}, set(), False
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL,):
            continue
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
            continue
        if p.name in params:
            kwargs[p.name] = params[p.name]
            used.add(p.name)
        elif p.name == "rng":
            kwargs["rng"] = rng_factory()
        elif p.name in ctx_values:
            value = ctx_values[p.name]
            value = value.fn() if isinstance(value, _Lazy) else value
            if value is None and p.default is p.empty:
                raise MissingPart(f"{what} needs {p.name!r}, which this dataset does not provide")
            if value is not None:
                kwargs[p.name] = value
        elif p.default is p.empty:
            raise DPTextError(f"{what} needs input {p.name!r}; give it in the sweep's params "
                              f"or use one of: {', '.join(CONTEXT_KEYS)}")
    if var_kw:
        for k, v in params.items():
            if k not in used:
                kwargs[k] = v
                used.add(k)
    return kwargs, used


def invoke(kind: str, name: str, params: dict, ctx: CellContext, label: str, observe: dict | None = None):
    """Run one metric/attack on a cell; returns its raw result.

    A class is instantiated (its constructor's inputs filled by name), then
    ``fit`` is called when it has one (e.g. an attack's shadow-corpus set-up),
    then its first method among ``evaluate / score / run / compute / attack /
    __call__``. ``observe`` holds options for building the attacker's view.
    """
    fn = resolve(kind, name)
    what = f"{kind} {name!r}"
    values = ctx.values(observe)
    rng_factory = lambda: ctx.rng(f"{kind}.{label}")  # noqa: E731
    if inspect.isclass(fn):
        kw, used = _fill(fn, params, values, rng_factory, what)
        obj = fn(**kw)
        rest = {k: v for k, v in params.items() if k not in used}
        if callable(getattr(obj, "fit", None)):
            kw_fit, used_fit = _fill(obj.fit, rest, values, rng_factory, what)
            obj.fit(**kw_fit)
            rest = {k: v for k, v in rest.items() if k not in used_fit}
        method = next(getattr(obj, m) for m in _METHODS if callable(getattr(obj, m, None)))
        kw2, used2 = _fill(method, rest, values, rng_factory, what)
        unused = set(rest) - used2
        if unused:
            raise DPTextError(f"{what}: unknown parameter(s) {', '.join(sorted(unused))}")
        return method(**kw2)
    kw, used = _fill(fn, params, values, rng_factory, what)
    unused = set(params) - used
    if unused:
        raise DPTextError(f"{what}: unknown parameter(s) {', '.join(sorted(unused))}")
    return fn(**kw)


def flatten(prefix: str, value) -> dict:
    """A result -> row columns (numbers as float, lists of numbers kept as a list column)."""
    if value is None:
        return {}
    if isinstance(value, (bool, np.bool_)):
        return {prefix: float(value)}
    if isinstance(value, (int, float, np.integer, np.floating)):
        return {prefix: float(value)}
    if isinstance(value, str):
        return {prefix: value}
    if hasattr(value, "to_dict") and callable(value.to_dict):
        value = value.to_dict()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(flatten(f"{prefix}.{k}", v))
        return out
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf" and arr.ndim == 1:
            if len(arr) > MAX_LIST:
                arr = arr[np.linspace(0, len(arr) - 1, MAX_LIST).astype(np.int64)]
            return {prefix: arr.astype(np.float64).tolist()}
    return {}


# the bench's own adapters register themselves (imported last: they use register_measure)
from dptext.bench import adapters as _adapters  # noqa: E402,F401
