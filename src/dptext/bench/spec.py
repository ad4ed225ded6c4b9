"""Sweep specifications: a YAML file -> a list of cells (docs/RESULTS.md).

A sweep is the product ``mechanisms × ε grid × datasets × seeds``; every cell
evaluates all the sweep's metrics and attacks on one perturbation of its
dataset, so a cell is one tidy row of results. Large studies group several
products under ``experiments`` (each inherits the top-level keys it does not
set)::

    name: smoke
    seeds: [0]
    datasets: [{name: wiki, limit: 20}]
    experiments:
      - name: inferdpt-tables
        mechanisms:
          - {name: rantext, epsilon: [2, 6, 10, 14], params: {integration_points: 500}}
          - {name: stencil, grid: {sigma: [0.8, 1.0]}}     # no ε: the mechanism has none
        metrics: [synonym_proportion, {name: effective_mapping_set_size, params: {n_units: 200}}]
        attacks: [{name: knn, params: {k: 10}}]

``params`` go to the constructor unchanged; every list under ``grid`` is one
more axis of the product. A cell's identity is a stable hash of everything
that defines it (``cell_id``), so a re-run finds the cells already finished.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import yaml

from dptext.cache import key_of
from dptext.errors import DPTextError

#: bump when the meaning of a cell's row changes, so old part files are not reused
BENCH_VERSION = 1
_EXPERIMENT_KEYS = ("mechanisms", "datasets", "metrics", "attacks", "seeds", "epsilon")
_TOP_KEYS = {"name", "description", "experiments", "plots", "papers", *_EXPERIMENT_KEYS}


@dataclass
class Sweep:
    name: str
    cells: list[dict]
    plots: dict
    source: str
    papers: list | None = None  # the papers' published numbers, printed beside ours (bench.report)


def _named(entry, what: str) -> dict:
    """``"knn"`` or ``{name: knn, params: {...}, ...}`` -> a dict with ``name`` and ``params``."""
    if isinstance(entry, str):
        return {"name": entry, "params": {}}
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise DPTextError(f"each {what} must be a name or a mapping with a 'name' (got {entry!r})")
    out = dict(entry)
    params = out.get("params") or {}
    if not isinstance(params, dict):
        raise DPTextError(f"{what} {out['name']!r}: 'params' must be a mapping")
    out["params"] = params
    return out


def _grid(entry: dict, what: str) -> list[dict]:
    """Expand ``grid: {k: [v1, v2]}`` into one params dict per combination."""
    grid = entry.get("grid") or {}
    if not isinstance(grid, dict):
        raise DPTextError(f"{what} {entry['name']!r}: 'grid' must be a mapping of lists")
    keys = sorted(grid)
    values = [v if isinstance(v, list) else [v] for v in (grid[k] for k in keys)]
    return [{**entry["params"], **dict(zip(keys, combo))} for combo in itertools.product(*values)]


def _epsilons(value, where: str) -> list[float | None]:
    if value is None:
        return [None]
    vals = value if isinstance(value, list) else [value]
    out = []
    for v in vals:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise DPTextError(f"{where}: epsilon {v!r} is not a number") from None
        if not f > 0 or f == float("inf"):
            raise DPTextError(f"{where}: epsilon {v!r} must be a finite number > 0")
        out.append(f)
    return out or [None]


def cell_id(cell: dict) -> str:
    """Stable hash of a cell's settings (the sweep's name is not part of it)."""
    return key_of({k: v for k, v in cell.items() if k not in ("sweep", "cell_id")})


def expand_experiment(sweep_name: str, exp: dict) -> list[dict]:
    name = exp.get("name", sweep_name)
    for key in ("mechanisms", "datasets"):
        if not exp.get(key):
            raise DPTextError(f"experiment {name!r}: '{key}' is empty")
    seeds = exp.get("seeds", [0])
    seeds = seeds if isinstance(seeds, list) else [seeds]
    if not all(isinstance(s, int) for s in seeds):
        raise DPTextError(f"experiment {name!r}: seeds must be integers")
    metrics = [_named(m, "metric") for m in exp.get("metrics") or []]
    attacks = [_named(a, "attack") for a in exp.get("attacks") or []]
    datasets = [_named(d, "dataset") for d in exp["datasets"]]
    cells = []
    for mech in (_named(m, "mechanism") for m in exp["mechanisms"]):
        eps_list = _epsilons(mech.get("epsilon", exp.get("epsilon")), f"experiment {name!r}, {mech['name']}")
        for params, eps, ds, seed in itertools.product(_grid(mech, "mechanism"), eps_list, datasets, seeds):
            ds_params = {k: v for k, v in ds.items() if k not in ("name", "params")}
            ds_params.update(ds["params"])
            cell = {
                "version": BENCH_VERSION,
                "sweep": sweep_name,
                "experiment": name,
                "mechanism": mech["name"],
                "label": str(mech["label"]).format(**params) if mech.get("label") else None,
                "epsilon": eps,
                "mechanism_params": params,
                "dataset": ds["name"],
                "dataset_params": ds_params,
                "seed": seed,
                "metrics": metrics,
                "attacks": attacks,
            }
            cell["cell_id"] = cell_id(cell)
            cells.append(cell)
    return cells


def parse_sweep(doc: dict, *, source: str = "<dict>") -> Sweep:
    if not isinstance(doc, dict):
        raise DPTextError(f"{source}: a sweep file must be a YAML mapping")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise DPTextError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}; "
                          f"allowed: {', '.join(sorted(_TOP_KEYS))}")
    name = str(doc.get("name") or Path(source).stem)
    base = {k: doc[k] for k in _EXPERIMENT_KEYS if k in doc}
    experiments = doc.get("experiments") or [{"name": name}]
    if not isinstance(experiments, list):
        raise DPTextError(f"{source}: 'experiments' must be a list")
    cells, seen = [], set()
    for exp in experiments:
        if not isinstance(exp, dict):
            raise DPTextError(f"{source}: each experiment must be a mapping")
        for cell in expand_experiment(name, {**base, **exp}):
            if cell["cell_id"] not in seen:
                seen.add(cell["cell_id"])
                cells.append(cell)
    papers = doc.get("papers") or []
    if not isinstance(papers, list) or not all(isinstance(p, dict) and {"experiment", "column", "source", "rows"}
                                               <= set(p) for p in papers):
        raise DPTextError(f"{source}: 'papers' must be a list of mappings with experiment, column, source, rows")
    return Sweep(name=name, cells=cells, plots=doc.get("plots") or {}, source=source, papers=papers)


def load_sweep(path: str | Path) -> Sweep:
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"sweep file {str(p)!r} not found")
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DPTextError(f"{p}: invalid YAML ({str(exc).splitlines()[0]})") from None
    return parse_sweep(doc, source=str(p))
