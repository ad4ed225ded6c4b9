"""Running a sweep: engines, resumable part files, the merged results table.

Layout of an output folder::

    OUT/parts/<cell_id>.parquet   one row per finished cell (written atomically)
    OUT/results.parquet           every cell of the sweep, merged after each run
    OUT/sweep.json                what ran: spec path, engine, counts, wall time

A cell whose part file says ``status == "ok"`` is never recomputed; skipped,
partial and failed cells run again next time (their parts may have landed).

Engines are small functions ``engine(cells, done, **options)`` that call
``done(cell, row)`` in the calling process as each cell finishes, in any
order; ``run_cell`` is the work unit. ``local`` runs cells one after another
in this process (sharing loaded spaces and mechanisms). More engines
register with ``register_engine`` or live in a module
``dptext.bench.<name>_engine`` that registers itself on import.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from dptext.bench.cell import run_cell
from dptext.progress import progress_reporter as progress_display
from dptext.bench.spec import Sweep, load_sweep
from dptext.bench.validate import validate_sweep
from dptext.errors import DPTextError

ENGINES: dict[str, Callable] = {}


def register_engine(name: str):
    def deco(fn):
        ENGINES[name] = fn
        return fn

    return deco


def get_engine(name: str) -> Callable:
    if name not in ENGINES:
        try:
            importlib.import_module(f"dptext.bench.{name}_engine")
        except ModuleNotFoundError as exc:
            if exc.name != f"dptext.bench.{name}_engine":
                raise
    if name not in ENGINES:
        raise DPTextError(f"unknown engine {name!r}; known engines: {', '.join(sorted(ENGINES))}")
    return ENGINES[name]


@register_engine("local")
def local_engine(cells: list[dict], done: Callable[[dict, dict], None], **options) -> None:
    """Run cells sequentially in this process."""
    for cell in cells:
        done(cell, run_cell(cell))


# ----- part files ----------------------------------------------------------------------------------
def part_path(out: Path, cid: str) -> Path:
    return out / "parts" / f"{cid}.parquet"


def write_part(out: Path, row: dict) -> Path:
    path = part_path(out, row["cell_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(pa.Table.from_pylist([row]), tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def read_status(path: Path) -> str | None:
    try:
        return pq.read_table(path, columns=["status"]).column("status")[0].as_py()
    except Exception:  # unreadable / foreign file: treat as not finished
        return None


def merge_parts(paths: list[Path]) -> pa.Table:
    tables = [pq.read_table(p) for p in paths if p.exists()]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="permissive")


# ----- the sweep ------------------------------------------------------------------------------------
def select_cells(cells: list[dict], only: list[str] | None) -> list[dict]:
    """Cells whose ``experiment`` or ``experiment/mechanism`` or ``experiment/variant`` is in ``only``."""
    if not only:
        return cells
    from dptext.bench.cell import settings_row

    keep = set(only)
    out = [c for c in cells if c["experiment"] in keep or f"{c['experiment']}/{c['mechanism']}" in keep
           or f"{c['experiment']}/{settings_row(c)['variant']}" in keep]
    if not out:
        raise DPTextError(f"--only {', '.join(only)} selects no cell; give EXPERIMENT or EXPERIMENT/MECHANISM")
    return out


def run_sweep(path: str | Path | Sweep, out: str | Path | None = None, *, engine: str = "local",
              progress: bool = True, retry: bool = True, only: list[str] | None = None, **engine_options) -> dict:
    """Run (or resume) a sweep; returns a summary with the results path and timings.

    Every selected cell (``only``: see :func:`select_cells`) is validated first
    (:func:`validate_sweep`): nothing runs when any names an unknown mechanism, dataset, metric,
    attack or parameter.
    """
    sweep = path if isinstance(path, Sweep) else load_sweep(path)
    selected = select_cells(sweep.cells, only)
    validate_sweep(Sweep(name=sweep.name, cells=selected, plots=sweep.plots, source=sweep.source))
    out = Path(out) if out is not None else Path("results") / sweep.name
    out.mkdir(parents=True, exist_ok=True)
    run = get_engine(engine)
    todo, reused = [], 0
    for cell in selected:
        status = read_status(part_path(out, cell["cell_id"])) if part_path(out, cell["cell_id"]).exists() else None
        if status == "ok" or (status is not None and not retry):
            reused += 1
        else:
            todo.append(cell)
    counts = {"ok": 0, "partial": 0, "skipped": 0, "error": 0}
    slowest = {"seconds": 0.0, "cell": None}
    t0 = time.perf_counter()
    with progress_display(progress and bool(todo)) as prog:
        task = prog.add_task(f"sweep {sweep.name}", total=len(todo)) if prog is not None else None

        def done(cell: dict, row: dict) -> None:
            write_part(out, row)
            counts[row.get("status", "error")] = counts.get(row.get("status", "error"), 0) + 1
            secs = float(row.get("time.total") or 0.0)
            if secs >= slowest["seconds"]:
                slowest.update(seconds=secs, cell=f"{row.get('experiment')}/{row.get('variant')}"
                               f"/eps={row.get('epsilon')}/{row.get('dataset')}/seed={row.get('seed')}")
            if prog is not None:
                prog.update(task, advance=1, description=f"sweep {sweep.name}: {row.get('variant')} "
                                                         f"ε={row.get('epsilon')} [{row.get('status')}]")

        run(todo, done, **engine_options)
    wall = time.perf_counter() - t0
    table = merge_parts([part_path(out, c["cell_id"]) for c in sweep.cells])
    results = out / "results.parquet"
    pq.write_table(table, results)
    summary = {"sweep": sweep.name, "source": sweep.source, "engine": engine,
               "cells": len(selected),
               "computed": len(todo), "reused": reused, **counts, "wall_seconds": round(wall, 3),
               "slowest_cell": slowest["cell"], "slowest_cell_seconds": round(slowest["seconds"], 3),
               "results": str(results)}
    (out / "sweep.json").write_text(json.dumps(summary, indent=2))
    return summary
