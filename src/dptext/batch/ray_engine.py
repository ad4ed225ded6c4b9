"""Engine ``ray``: Ray Data ``map_batches`` with one stateful sanitizer per actor.

The driver cuts the (index, text) stream into windows of ``window`` documents;
each window becomes a Ray Dataset of Arrow blocks of ``shard_size`` rows,
mapped by a pool of ``workers`` actors of :class:`RaySanitizer` (one CPU
each). An actor builds the mechanism once, on a memory-mapped copy of the
cached space (built from installed assets on a node that has no cache), and
then sanitizes every batch it is given. The per-document stream rule of
:mod:`dptext.batch.sanitize` makes the output identical to engine ``local``
at the same seed. ``preserve_order`` keeps results in input order; the driver
checks it. Only (index, text) pairs travel through Ray; the other fields stay
with the driver, which bounds its memory by the window.

Ray is started by :meth:`RayEngine.start` (``num_cpus=workers``, no
dashboard) unless it is already running in this process or ``address``
names an existing cluster (whose nodes must have dptext installed); it is
shut down again only if this engine started it, and then also torn down by a
watchdog process if the driver dies without shutting it down
(:mod:`dptext.batch.ray_watchdog`).
"""

from __future__ import annotations

import logging
import os
import pickle
import time
import warnings
from typing import Iterable, Iterator

from dptext.batch.engines import shards
from dptext.batch.sanitize import BatchJob, DocResult, sanitize_shard
from dptext.errors import DPTextError


class RaySanitizer:
    """Stateful Ray Data callable: mechanism loaded once per actor, then one call per batch."""

    def __init__(self, job: BatchJob, entropy: int):
        self.mech = job.build()
        self.entropy = entropy

    def __call__(self, batch):
        import pyarrow as pa

        # one row per shard (lists of whole stream blocks), so a block never straddles two calls; a shard's
        # results travel as one pickle, which writes the report's claim (one dict shared by every
        # document) once instead of once per document
        out = [pickle.dumps(sanitize_shard(self.mech, self.entropy, idx, txt), protocol=5)
               for idx, txt in zip(batch.column("idx").to_pylist(), batch.column("text").to_pylist())]
        return pa.table({"results": pa.array(out, pa.binary())})


def start_ray(*, address: str | None = None, num_cpus: int | None = None, verbose: bool = False,
              reaper=None) -> bool:
    """Connect to (or start) Ray quietly; True when this call started it (so the caller shuts it down).

    ``address`` (or ``$RAY_ADDRESS``) joins an existing cluster; otherwise a local Ray with ``num_cpus``,
    whose processes ``reaper`` (a :class:`~dptext.batch.ray_watchdog.RayReaper`) marks for tear-down.
    Unless ``verbose``, Ray's start-up log warnings stay off stderr.
    """
    import ray

    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    level = logging.INFO if verbose else logging.ERROR
    kw = dict(include_dashboard=False, log_to_driver=verbose, configure_logging=True, logging_level=level)
    if reaper is not None and not address:
        reaper.mark()  # kept until close(): the raylet starts some agents after init returns
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=num_cpus, **kw)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        if reaper is not None:
            reaper.unmark()
        raise DPTextError(f"cannot start or reach Ray{' at ' + address if address else ''}: {exc}") from None
    return True


def quiet_data_context():
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # e.g. "progress bars disabled"
    return ctx


class RayEngine:
    name = "ray"

    def __init__(self, job: BatchJob, entropy: int, *, workers: int | None = None, address: str | None = None,
                 shard_size: int = 2048, window: int = 200_000, verbose: bool = False):
        self.job, self.entropy = job, entropy
        self.workers, self.address = workers, address
        self.shard_size, self.window = max(1, int(shard_size)), max(1, int(window))
        self.owns_ray = False
        self.verbose = verbose
        self.reaper = None
        self.startup_seconds = 0.0

    def start(self) -> "RayEngine":
        import ray

        t0 = time.perf_counter()
        if not self.address:  # same machine: build the space's cache once, before the actors race to
            from dptext.spaces import get_space

            get_space(self.job.space_name).load()
        if not (self.address or os.environ.get("RAY_ADDRESS")) and not ray.is_initialized():
            from dptext.batch.ray_watchdog import RayReaper

            self.reaper = RayReaper().start()
        self.owns_ray = start_ray(address=self.address, num_cpus=self.workers, verbose=self.verbose,
                                  reaper=self.reaper)
        if self.workers is None:
            self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        quiet_data_context()
        self.startup_seconds = time.perf_counter() - t0
        return self

    def run(self, items: Iterable[tuple[int, str]]) -> Iterator[DocResult]:
        window: list[tuple[list[int], list[str]]] = []
        n = 0
        for shard in shards(items, self.shard_size):
            window.append(shard)
            n += len(shard[0])
            if n >= self.window:
                yield from self._run_window(window)
                window, n = [], 0
        if window:
            yield from self._run_window(window)

    def _run_window(self, window) -> Iterator[DocResult]:
        import pyarrow as pa
        import ray.data

        tables = [pa.table({"idx": pa.array([i], pa.list_(pa.int64())), "text": pa.array([t], pa.list_(pa.string()))})
                  for i, t in window]
        expected = iter([i for idx, _ in window for i in idx])
        with warnings.catch_warnings():
            # max_restarts has no named parameter in this Ray; passing it through **ray_remote_args warns
            warnings.filterwarnings("ignore", message=".*ray_remote_args.*deprecated")
            ds = ray.data.from_arrow(tables).map_batches(
                RaySanitizer, batch_size=1, batch_format="pyarrow",
                compute=ray.data.ActorPoolStrategy(size=min(self.workers, len(tables))), num_cpus=1,
                fn_constructor_kwargs={"job": self.job, "entropy": self.entropy},
                max_restarts=0)  # a dead actor fails the run; restartable actors make Ray log an error line
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            for blob in batch.column("results").to_pylist():
                for r in pickle.loads(blob):  # written by this run's own actors (as Ray's own transfers are)
                    if r.index != next(expected, None):
                        raise RuntimeError(f"Ray returned document {r.index} out of order")
                    yield r

    def close(self) -> None:
        if self.owns_ray:
            import ray

            ray.shutdown()
            self.owns_ray = False
        if self.reaper is not None:  # sweeps whatever the shutdown left behind
            self.reaper.unmark()
            self.reaper.close()
            self.reaper = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
