"""One sweep cell: perturb a dataset once, run every metric and attack on it.

``run_cell(cell_dict) -> row_dict`` is a pure top-level function of a plain
dict (picklable), so any engine can ship it to a worker (a process, a Ray
task). The row is tidy: the settings columns, then ``metric.*`` / ``attack.*``
value columns, ``time.*`` seconds, and a ``status``:

* ``ok``: everything ran;
* ``partial``: the perturbation ran but some metric/attack is missing or
  failed (named in ``missing`` / ``errors``);
* ``skipped``: the mechanism or dataset is not available (``missing``);
* ``error``: the cell itself failed (``errors``).

Only ``ok`` cells count as finished; the others run again on the next
``run_sweep`` so parts that land later fill them in.
"""

from __future__ import annotations

import json
import platform
import time
import traceback

import numpy as np

from dptext.bench.inputs import MissingPart, load_docs, make_mechanism
from dptext.bench.measures import CellContext, flatten, invoke
from dptext.errors import DPTextError

SETTINGS = ("cell_id", "sweep", "experiment", "mechanism", "epsilon", "dataset", "seed")


def label_of(entry: dict) -> str:
    return str(entry.get("label") or entry["name"])


def settings_row(cell: dict) -> dict:
    row = {k: cell.get(k) for k in SETTINGS}
    row["epsilon"] = float("nan") if cell.get("epsilon") is None else float(cell["epsilon"])
    row["mechanism_params"] = json.dumps(cell.get("mechanism_params") or {}, sort_keys=True)
    row["dataset_params"] = json.dumps(cell.get("dataset_params") or {}, sort_keys=True)
    extra = {k: v for k, v in sorted((cell.get("mechanism_params") or {}).items()) if k != "space"}
    row["variant"] = cell.get("label") or cell["mechanism"] + (
        "(" + ",".join(f"{k}={v}" for k, v in extra.items()) + ")" if extra else "")
    return row


def _perturb(mech, docs, rng) -> list:
    return [mech.perturb(d, rng=rng) for d in docs]


def run_cell(cell: dict) -> dict:
    """Compute one cell's row (never raises for a missing part or a failing metric)."""
    t0 = time.perf_counter()
    row = settings_row(cell)
    row.update(status="ok", missing="", errors="", host=platform.node())
    missing, errors = [], []
    try:
        t = time.perf_counter()
        docs = load_docs(cell["dataset"], cell.get("dataset_params") or {})
        mech = make_mechanism(cell["mechanism"], cell.get("epsilon"), cell.get("mechanism_params") or {})
        row["time.setup"] = time.perf_counter() - t
        rng = np.random.default_rng(np.random.SeedSequence(cell["seed"], spawn_key=(0,)))
        t = time.perf_counter()
        results = _perturb(mech, docs.documents, rng)
        row["time.perturb"] = time.perf_counter() - t
    except MissingPart as exc:
        row.update(status="skipped", missing=str(exc), **{"time.total": time.perf_counter() - t0})
        return row
    except Exception as exc:  # a cell never takes the sweep down; the error is recorded
        row.update(status="error", errors=_describe(exc), **{"time.total": time.perf_counter() - t0})
        return row
    counts: dict[str, int] = {}
    for r in results:
        for k, v in r.counts().items():
            counts[k] = counts.get(k, 0) + v
    n_units = sum(counts.values())
    row.update({"n_docs": len(docs.documents), "n_units": n_units,
                **{f"share.{k}": v / max(n_units, 1) for k, v in counts.items()}})
    claim = results[0].privacy.get("claim", {}) if results else {}
    row["claim.kind"] = str(claim.get("kind"))
    row["claim.bound"] = _num(claim.get("bound"))
    ctx = CellContext(cell, mech, docs, results)
    for kind, entries in (("metric", cell.get("metrics") or []), ("attack", cell.get("attacks") or [])):
        for entry in entries:
            label = label_of(entry)
            t = time.perf_counter()
            try:
                value = invoke(kind, entry["name"], entry.get("params") or {}, ctx, label, entry.get("observe"))
                row.update(flatten(f"{kind}.{label}", value))
            except MissingPart as exc:
                missing.append(str(exc))
            except Exception as exc:
                errors.append(f"{kind} {label}: {_describe(exc)}")
            row[f"time.{kind}.{label}"] = time.perf_counter() - t
    if missing or errors:
        row["status"] = "partial"
    row["missing"], row["errors"] = "; ".join(missing), "; ".join(errors)
    row["time.total"] = time.perf_counter() - t0
    return row


def _num(v) -> float:
    if v in ("inf", float("inf")):
        return float("inf")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _describe(exc: Exception) -> str:
    if isinstance(exc, DPTextError):
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"
