"""Sweep engine ``ray``: every cell is one Ray task running :func:`dptext.bench.cell.run_cell`.

``dptext bench run SWEEP --engine ray`` imports this module, which registers
the engine. Ray is started locally (all CPUs, no dashboard) unless it is
already running in this process or ``$RAY_ADDRESS`` / ``address=`` names an
existing cluster, whose nodes need dptext installed; it is shut down again
only if this engine started it. Each task asks for one CPU; Ray reuses its
worker processes, so a worker keeps the spaces and mechanisms it loaded for
later cells. Rows come back as cells finish (any order) and are handed to
``done`` in the driver, which writes the part files, so resuming works as
with the local engine. A task that dies (worker crash, lost node) becomes an
``error`` row for that cell and runs again on the next ``bench run``.
"""

from __future__ import annotations

from typing import Callable

from dptext.batch.ray_engine import start_ray
from dptext.bench.cell import _describe, run_cell, settings_row
from dptext.bench.engine import register_engine


@register_engine("ray")
def ray_engine(cells: list[dict], done: Callable[[dict, dict], None], *, address: str | None = None,
               num_cpus: int | None = None, **options) -> None:
    """Run cells as Ray tasks (one CPU each) and report each row as it finishes."""
    if not cells:
        return
    import ray

    owns = start_ray(address=address, num_cpus=num_cpus)
    try:
        task = ray.remote(num_cpus=1)(run_cell)
        pending = {task.remote(cell): cell for cell in cells}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                cell = pending.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as exc:  # the task itself died; run_cell never raises for cell errors
                    row = settings_row(cell)
                    row.update(status="error", missing="", errors=f"ray: {_describe(exc)}")
                done(cell, row)
    finally:
        if owns:
            ray.shutdown()
