"""Engine ``ray``: one stateful sanitizer actor per CPU, shards dispatched in order.

The driver cuts the (index, text) stream into shards of ``shard_size``
documents (whole stream blocks) and sends them round-robin to ``workers``
actors of :class:`RaySanitizer` (one CPU each), with at most two shards per
actor in flight, so the driver's memory is bounded however long the corpus.
An actor builds the mechanism once (the space's cached arrays and tables are
memory-mapped; a node without a cache builds them from installed assets) and
then sanitizes every shard it is given; a shard's results come back as one
pickle. Results are taken in submission order and the driver checks the
document order. The per-document stream rule of :mod:`dptext.batch.sanitize`
makes the output identical to engine ``local`` at the same seed. Only
(index, text) pairs travel through Ray; the other fields stay with the driver.

Plain actors rather than Ray Data: the dataset executor's planning, block
bookkeeping and polling cost more than the sanitization itself on small
machines (100,000 Lee sentences on 2 CPUs: 84k units/s end to end through
``map_batches``, see ``benchmarks/bench_batch.py`` for the actor figures).

Ray is started by :meth:`RayEngine.start` (``num_cpus=workers``, no
dashboard) unless it is already running in this process or ``address``
names an existing cluster (whose nodes must have dptext installed); it is
shut down again only if this engine started it, and then also torn down by a
watchdog process if the driver dies without shutting it down
(:mod:`dptext.batch.ray_watchdog`). A run on an existing cluster kills its
own actors when it ends.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from typing import Iterable, Iterator

from dptext.batch.engines import IN_FLIGHT_PER_WORKER, in_order, shards
from dptext.batch.sanitize import BatchJob, DocResult, sanitize_shard
from dptext.errors import DPTextError


class RaySanitizer:
    """The actor: mechanism loaded once, then one call per shard."""

    def __init__(self, job: BatchJob, entropy: int):
        # an exception escaping an actor's constructor reaches the driver only as "the actor died":
        # keep it for the calls, which re-raise it as itself
        self.mech, self.error = None, None
        try:
            self.mech = job.build()
        except Exception as exc:  # noqa: BLE001 (re-raised by every call)
            self.error = exc
        self.entropy = entropy

    def run(self, indices: list[int], texts: list) -> bytes:
        if self.error is not None:
            raise self.error
        # one pickle per shard: the report's claim (one dict shared by every document) is written once
        return pickle.dumps(sanitize_shard(self.mech, self.entropy, indices, texts), protocol=5)


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


class RayEngine:
    name = "ray"

    def __init__(self, job: BatchJob, entropy: int, *, workers: int | None = None, address: str | None = None,
                 shard_size: int = 2048, verbose: bool = False):
        self.job, self.entropy = job, entropy
        self.workers, self.address = workers, address
        self.shard_size = max(1, int(shard_size))
        self.actors: list = []
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
        actor = ray.remote(num_cpus=1, max_restarts=0)(RaySanitizer)  # a dead actor fails the run
        self.actors = [actor.remote(self.job, self.entropy) for _ in range(self.workers)]
        self.startup_seconds = time.perf_counter() - t0
        return self

    def run(self, items: Iterable[tuple[int, str]]) -> Iterator[DocResult]:
        actors = self.actors
        yield from in_order(shards(items, self.shard_size),
                            lambda k, idx, txt: (idx, actors[k % len(actors)].run.remote(idx, txt)),
                            self._collect, IN_FLIGHT_PER_WORKER * len(actors))

    def _collect(self, pending) -> list[DocResult]:
        import ray

        indices, ref = pending
        try:
            results = pickle.loads(ray.get(ref))  # written by this run's own actors (as Ray's own transfers are)
        except ray.exceptions.RayTaskError as exc:  # the actor's own exception, e.g. a space it cannot build
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, Exception) else exc.as_instanceof_cause()) from None
        except ray.exceptions.RayActorError as exc:
            raise DPTextError(f"a Ray worker stopped: {str(exc).splitlines()[0]}") from None
        if [r.index for r in results] != list(indices):
            raise RuntimeError("Ray returned documents out of order")
        return results

    def close(self) -> None:
        if self.actors and not self.owns_ray:  # on a cluster that outlives this run: stop its actors
            import ray

            for a in self.actors:
                ray.kill(a)
        self.actors = []
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
