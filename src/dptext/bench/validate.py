"""Check every cell of a sweep before any cell runs (fail closed on a typo).

A sweep that names an unknown mechanism, dataset, metric or attack, an
unknown parameter of one, or an unknown ``observe`` option, is refused as a
whole with one message naming the first problem (and how many more there
are). Names are checked against the registries; parameters against the
signatures a cell will call (a callable taking ``**kwargs`` accepts any).
"""

from __future__ import annotations

import inspect
from pathlib import Path

from dptext.bench.measures import _METHODS, resolve
from dptext.bench.spec import Sweep
from dptext.errors import DPTextError

_DATASET_KEYS = {"path", "split", "split_seed", "limit", "shadow_split", "shadow_limit"}
_OBSERVE_KEYS = {"targets", "max_targets", "repeats"}


def _accepts(fn) -> tuple[set[str], bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set(), True
    names = {p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return names, any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


def _method_of(cls):
    """The method ``invoke`` will call on an instance of ``cls`` (the first of ``_METHODS`` it defines)."""
    for m in _METHODS:
        if m == "__call__":
            if any("__call__" in vars(k) for k in cls.__mro__[:-1]):
                return getattr(cls, m)
        elif callable(getattr(cls, m, None)):
            return getattr(cls, m)
    return None


def measure_params(fn) -> tuple[set[str], bool]:
    """Parameter names a metric/attack accepts across the calls a cell makes (and whether any is open)."""
    if not inspect.isclass(fn):
        return _accepts(fn)
    names, open_ = set(), False
    for meth in (fn.__init__, getattr(fn, "fit", None), _method_of(fn)):
        if callable(meth):
            more, o = _accepts(meth)
            names |= more
            open_ |= o
    return names - {"self"}, open_


def _mechanism_problem(name: str, epsilon, params: dict) -> str | None:
    from dptext.bench.inputs import mechanism_spec

    try:
        mechanism_spec(name, epsilon, params)
    except DPTextError as exc:
        return f"mechanism {name!r}: {exc}" if name not in str(exc) else str(exc)
    return None


def _dataset_problem(name: str, params: dict) -> str | None:
    unknown = set(params) - _DATASET_KEYS
    if unknown:
        return f"dataset {name!r}: unknown option(s) {', '.join(sorted(unknown))}"
    if params.get("path"):
        return None if Path(params["path"]).is_file() else f"dataset {name!r}: file {params['path']!r} not found"
    from dptext.data import list_datasets

    known = list_datasets()
    names = [d if isinstance(d, str) else getattr(d, "name", str(d)) for d in known]
    if name not in names:
        return f"unknown dataset {name!r}; known: {', '.join(sorted(names))}"
    return None


def _entry_problem(kind: str, entry: dict) -> str | None:
    name = entry["name"]
    try:
        fn = resolve(kind, name)
    except DPTextError:
        from dptext.bench.registry import MEASURES

        known = sorted({n for k, n in MEASURES if k == kind} | set(_registry_names(kind)))
        return f"unknown {kind} {name!r}; known: {', '.join(known)}"
    accepted, open_ = measure_params(fn)
    unknown = set(entry.get("params") or {}) - accepted
    if unknown and not open_:
        return f"{kind} {name!r}: unknown parameter(s) {', '.join(sorted(unknown))}"
    obs = entry.get("observe") or {}
    if not isinstance(obs, dict) or set(obs) - _OBSERVE_KEYS:
        return f"{kind} {name!r}: unknown observe option(s); allowed: {', '.join(sorted(_OBSERVE_KEYS))}"
    return None


def _registry_names(kind: str) -> list[str]:
    if kind == "attack":
        from dptext.attacks import ATTACKS

        return list(ATTACKS)
    import dptext.metrics as m

    table = getattr(m, "METRICS", None)
    return list(table) if isinstance(table, dict) else []


def sweep_problems(sweep: Sweep) -> list[str]:
    """Every distinct problem of the sweep's cells, in cell order."""
    problems: list[str] = []
    seen: set[str] = set()

    def add(where: str, problem: str | None) -> None:
        if problem and problem not in seen:
            seen.add(problem)
            problems.append(f"experiment {where}: {problem}")

    checked: set[str] = set()
    for cell in sweep.cells:
        where = cell["experiment"]
        items = [("mech", cell["mechanism"], cell.get("epsilon"), cell.get("mechanism_params") or {}),
                 ("data", cell["dataset"], cell.get("dataset_params") or {})]
        items += [("metric", e) for e in cell.get("metrics") or []]
        items += [("attack", e) for e in cell.get("attacks") or []]
        for item in items:
            key = repr(item)
            if key in checked:
                continue
            checked.add(key)
            if item[0] == "mech":
                add(where, _mechanism_problem(item[1], item[2], item[3]))
            elif item[0] == "data":
                add(where, _dataset_problem(item[1], item[2]))
            else:
                add(where, _entry_problem(item[0], item[1]))
    return problems


def validate_sweep(sweep: Sweep) -> None:
    """Raise ``DPTextError`` (one line) when any cell of ``sweep`` cannot run as written."""
    problems = sweep_problems(sweep)
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise DPTextError(f"{sweep.source}: {problems[0]}{more}")
