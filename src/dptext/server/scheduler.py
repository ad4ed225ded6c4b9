"""Perturbation off the event loop, with bounded concurrency, admission control and small jobs first.

One client must not stall the others. Three mechanisms share the work:

* **Admission.** At most ``limits.max_queue`` requests are perturbing or
  waiting to; the next one is answered 503 with ``Retry-After`` at once,
  before any work is done.
* **Worker threads.** Perturbation runs in a thread pool, never on the event
  loop, so sockets, health checks and streams keep moving while it runs.
* **A priority gate.** At most ``limits.perturb_concurrency`` chunks are
  perturbed at once. A long private segment is cut into chunks of about
  ``CHUNK_CHARS`` characters at whitespace, and the gate is taken per chunk;
  when it frees up, the waiting chunk whose request has the least work left
  goes first. A light request therefore waits for at most one chunk of a
  heavy one, not for the whole heavy request.

Chunking never changes what a context-free mechanism releases: every unit is
perturbed independently, and the cut falls between units (whitespace goes to
the start of the next chunk, as it would be segmented in the whole text).
Contextual mechanisms (whose rows depend on neighbouring units) are not cut.

**Batching** (:mod:`dptext.server.batching`, once :meth:`Scheduler.attach`
has been given the perturber): the gate then admits up to ``BATCH`` chunks
at once, and their mechanism calls are merged into one ``perturb_many`` per
mechanism, each request keeping its own Sanitizer call, memo staging, report
and charge. The priority order still decides which chunks enter when more
than ``BATCH`` wait. A contextual mechanism is not batched (one slot per
``limits.perturb_concurrency`` as before).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext

from dptext.server.errors import ApiError

CHUNK_CHARS = 2048
BATCH = 64  # chunks (of at most about CHUNK_CHARS characters) merged into one mechanism call at most
_CUT = re.compile(r"\s+(?=\S)")


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut at whitespace into pieces of about ``size`` characters (``"".join`` gives ``text`` back)."""
    if len(text) <= size:
        return [text]
    out, start = [], 0
    while len(text) - start > size:
        m = _CUT.search(text, start + size)
        if m is None:
            break
        out.append(text[start:m.start()])
        start = m.start()
    out.append(text[start:])
    return out


def ungated(priority: float):
    """A gate that never waits (single-threaded callers: tests, scripts)."""
    return nullcontext()


class PriorityGate:
    """A counting semaphore whose waiters are served smallest priority value first (FIFO among equals).

    A released slot is handed straight to the first waiter, whose own event alone is set: one wake-up per
    release however many threads wait (a shared condition would wake every waiter to re-check the heap).
    """

    def __init__(self, slots: int) -> None:
        self.free = slots
        self.lock = threading.Lock()
        self.waiting: list[tuple[float, int, threading.Event]] = []
        self.seq = itertools.count()

    @contextmanager
    def __call__(self, priority: float):
        with self.lock:
            if self.free > 0 and not self.waiting:
                self.free -= 1
                turn = None
            else:
                turn = threading.Event()
                heapq.heappush(self.waiting, (priority, next(self.seq), turn))
        if turn is not None:
            turn.wait()  # set by the releaser that handed its slot to this waiter
        try:
            yield
        finally:
            with self.lock:
                if self.waiting:
                    heapq.heappop(self.waiting)[2].set()
                else:
                    self.free += 1


class Scheduler:
    def __init__(self, concurrency: int, max_queue: int, batch: bool = True) -> None:
        self.concurrency = concurrency
        self.gate = PriorityGate(concurrency)
        self.max_queue = max_queue
        self.admitted = 0  # touched on the event loop only
        self.pool = ThreadPoolExecutor(max_workers=max_queue, thread_name_prefix="dptext-perturb")
        self.batch = batch  # False: one mechanism call per chunk (the behaviour before batching)
        self.combiner = None
        self.remote = None  # a dptext.server.worker.PerturbProcess: perturbation runs in that process

    @property
    def queued(self) -> int:
        return self.admitted

    def attach(self, perturber) -> None:
        """Batch the mechanism calls of ``perturber`` (a :class:`dptext.server.privacy.Perturber`); call it
        before traffic arrives. Randomness is shared across a batch only when no ``privacy.seed`` is set."""
        from dptext.server.batching import attach

        if not self.batch:
            return
        self.combiner = attach(perturber.sanitizer, shared_rng=perturber.seed is None)
        if self.combiner is not None:
            self.gate = PriorityGate(max(self.concurrency, BATCH))

    async def run(self, fn, *args):
        """Run ``fn(gate, *args)`` in a worker thread; 503 when ``max_queue`` requests are already in."""
        if self.admitted >= self.max_queue:
            raise ApiError(503, f"the proxy is busy ({self.admitted} requests perturbing or queued); retry shortly",
                           type="server_error", code="overloaded", headers={"retry-after": "1"})
        self.admitted += 1
        try:
            if self.remote is not None:  # ``fn``'s work (perturb_and_charge) is done by the child process
                return await self.remote.call(*args)
            return await asyncio.get_running_loop().run_in_executor(self.pool, fn, self.gate, *args)
        finally:
            self.admitted -= 1

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.remote is not None:
            self.remote.close()
