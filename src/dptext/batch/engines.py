"""Engine ``local``: worker processes sharing the space through memory maps.

Documents are cut into fixed-size shards (``shard_size`` documents) that are
sent to a pool of ``workers`` processes (``spawn`` start method: no forked
locks or threads). Each worker builds the mechanism once; the cached space
and its tables are memory-mapped, so they exist once in the page cache
however many workers run. Randomness follows the
per-document stream rule of :mod:`dptext.batch.sanitize`, so the output does
not depend on the number of workers. At most ``2 * workers`` shards are in
flight, so memory stays bounded on corpora of any length; results come back
in input order. ``workers=1`` runs in the calling process (no pool).
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from contextlib import contextmanager
from typing import Iterable, Iterator

from dptext.errors import DPTextError
from dptext.batch.sanitize import STREAM_BLOCK, BatchJob, DocResult, sanitize_shard

_WORKER: dict = {}
START_TIMEOUT = 300  # seconds for the pool to spawn and load the mechanism


def _init_worker(job: BatchJob, entropy: int) -> None:
    # Ctrl-C reaches the whole process group: only the driver handles it (and terminates the pool). A worker
    # starts with SIGINT blocked (_ctrl_c_held) and unblocks it once ignored, so a Ctrl-C during its start-up
    # is dropped instead of printing a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    # an exception escaping a Pool initializer makes the pool respawn workers forever: keep it for the tasks
    try:
        _WORKER["mech"] = job.build()
    except BaseException as exc:  # noqa: BLE001 (re-raised by every task of this worker)
        _WORKER["error"] = exc
    _WORKER["entropy"] = entropy


def _run_shard(indices: list[int], texts: list[str]) -> list[DocResult]:
    if "error" in _WORKER:
        raise _WORKER["error"]
    return sanitize_shard(_WORKER["mech"], _WORKER["entropy"], indices, texts)


def _ready(_) -> int:
    if "error" in _WORKER:
        raise _WORKER["error"]
    # long enough that each worker usually takes one; on a loaded machine one may still be starting when the
    # run begins (harmless: it holds SIGINT blocked until its initializer has run, and takes tasks only after)
    time.sleep(0.05)
    return os.getpid()


IN_FLIGHT_PER_WORKER = 2  # shards queued per worker: one running, one ready to start


def in_order(shard_iter, submit, collect, in_flight: int) -> Iterator[DocResult]:
    """Shards submitted as they come (``submit(k, indices, texts)`` for the k-th), at most ``in_flight``
    pending at a time, and their results (``collect(pending)``, a list of DocResult) yielded in
    submission order: the driver's memory stays bounded on corpora of any length."""
    pending: deque = deque()
    for k, (idx, txt) in enumerate(shard_iter):
        if len(pending) >= in_flight:
            yield from collect(pending.popleft())
        pending.append(submit(k, idx, txt))
    while pending:
        yield from collect(pending.popleft())


def shards(items: Iterable[tuple[int, str]], size: int) -> Iterator[tuple[list[int], list[str]]]:
    """Consecutive records in shards of whole stream blocks: a shard spans ``size`` record positions rounded
    up to a multiple of ``STREAM_BLOCK`` and starts on a multiple of it (fewer rows where records were
    malformed), so no stream block is ever split between two workers."""
    span = -(-max(1, int(size)) // STREAM_BLOCK) * STREAM_BLOCK
    idx: list[int] = []
    txt: list[str] = []
    for i, t in items:
        if idx and i // span != idx[0] // span:
            yield idx, txt
            idx, txt = [], []
        idx.append(i)
        txt.append(t)
    if idx:
        yield idx, txt


@contextmanager
def _single_threaded_children():
    """Children inherit one BLAS/OpenMP thread each (the workers are the parallelism)."""
    keys = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: "1" for k in keys})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def _ctrl_c_held():
    """SIGINT blocked in this thread while the pool is built: the processes it spawns inherit the blocked
    mask (so does the pool's thread that replaces dead workers), and a Ctrl-C meanwhile is raised here on
    exit, once ``self.pool`` is set and can be terminated. multiprocessing's resource tracker unblocks SIGINT
    after starting itself, so it is started first."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class LocalEngine:
    name = "local"

    def __init__(self, job: BatchJob, entropy: int, *, workers: int = 1, shard_size: int = 256):
        self.job, self.entropy = job, entropy
        self.workers, self.shard_size = max(1, int(workers)), max(1, int(shard_size))
        self.pool = None

    def start(self) -> "LocalEngine":
        if self.workers == 1:
            _WORKER.clear()
            _WORKER["mech"], _WORKER["entropy"] = self.job.build(), self.entropy
        else:
            import multiprocessing as mp

            try:
                with _single_threaded_children(), _ctrl_c_held():
                    self.pool = mp.get_context("spawn").Pool(self.workers, initializer=_init_worker,
                                                             initargs=(self.job, self.entropy))
                self.pool.map_async(_ready, range(self.workers), chunksize=1).get(timeout=START_TIMEOUT)
            except BaseException as exc:
                self.close()
                if isinstance(exc, mp.TimeoutError):
                    raise DPTextError(f"{self.workers} worker processes did not start within {START_TIMEOUT} s (is "
                                      "the main module importable? run through `dptext` or a script file)") from None
                raise
        return self

    def run(self, items: Iterable[tuple[int, str]]) -> Iterator[DocResult]:
        if self.pool is None:
            for idx, txt in shards(items, self.shard_size):
                yield from _run_shard(idx, txt)
            return
        yield from in_order(shards(items, self.shard_size),
                            lambda k, idx, txt: self.pool.apply_async(_run_shard, (idx, txt)),
                            lambda job: job.get(), IN_FLIGHT_PER_WORKER * self.workers)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
        _WORKER.clear()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
