"""Batched perturbation: the mechanism calls of concurrent requests merged into one ``perturb_many``.

Every request still runs its own :meth:`dptext.pipeline.Sanitizer.sanitize`
call in its own worker thread (its own memo staging, policy plan, report and
ε charge, exactly as before); only the mechanism's ``perturb(text, rng=)``
calls inside those Sanitizer calls are collected and served together.

How (:class:`Combiner`): the Sanitizer's lock is replaced by a combining
lock. It still lets one thread at a time run the Sanitizer's own Python code,
but a thread that reaches the mechanism parks its text and *releases* the
lock while it waits, so the next request's thread can run up to its own
mechanism call. When every thread inside the lock is parked (no one else is
queued for it), the last one to arrive runs one
:meth:`~dptext.mechanisms.base.Mechanism.perturb_many` per mechanism over all
parked texts and hands each thread its own result. Under load the queue of
waiting requests is therefore drained into one vectorised call; a lone
request is served at once (a batch of one).

Randomness: ``perturb_many`` draws every text's noise from one generator, with
the same law per text as ``perturb``; draws for different texts are
independent. With OS entropy (the default) the combiner's own generator
(``default_rng()``, OS entropy, used under the lock only) serves the batch.
With ``privacy.seed`` (tests) texts are batched only with texts of the same
generator, so a seeded request's output does not depend on its neighbours.

Failure isolation (fail closed per request): if the merged call raises, each
parked text is perturbed again on its own; a text that fails then raises in
its own request's thread only, and the other requests get their results. No
result is ever handed to another request: each parked text has its own slot.
"""

from __future__ import annotations

import threading

import numpy as np

from dptext.errors import PrivacyError
from dptext.mechanisms.base import Mechanism


class _Job:
    __slots__ = ("text", "rng", "dp_only", "result", "error", "done")

    def __init__(self, text, rng, dp_only: bool) -> None:
        self.text, self.rng, self.dp_only = text, rng, dp_only
        self.result = self.error = None
        self.done = False


class Combiner:
    """A drop-in for a Sanitizer's lock that merges its holders' mechanism calls (see the module docstring)."""

    def __init__(self, shared_rng: bool) -> None:
        self.cond = threading.Condition(threading.Lock())  # the big lock: Sanitizer code runs under it
        self.count_lock = threading.Lock()  # guards `inside`, which changes before the big lock is held
        self.inside = 0  # threads in `with combiner:` (holding the big lock, parked, or queued for it)
        self.served = 0  # of those, threads whose job a flush has served and that have not parked or left since
        self.parked: list[tuple[object, _Job]] = []  # (mechanism, job), touched under the big lock only
        self.local = threading.local()
        self.rng = np.random.default_rng() if shared_rng else None
        self.calls = 0  # perturb_many calls made (for tests and the benchmark)
        self.texts = 0  # texts served by them

    # ----- the lock protocol ---------------------------------------------------------------------------------
    def __enter__(self):
        with self.count_lock:
            self.inside += 1
        self.cond.acquire()
        self.local.inside = True
        return self

    def __exit__(self, *exc) -> None:
        self.local.inside = False
        with self.count_lock:
            self.inside -= 1
            self.served -= self._was_served()
            ready = bool(self.parked) and len(self.parked) == self.inside - self.served
        if ready:  # the threads left are all parked or already served: serve the parked ones before leaving
            self._flush()
        self.cond.release()

    def _was_served(self) -> int:
        """1 (and the mark cleared) when this thread's last job was served since it last parked or left."""
        was = getattr(self.local, "served", False)
        self.local.served = False
        return int(was)

    # ----- a mechanism's perturb, batched ------------------------------------------------------------------
    def install(self, mech) -> bool:
        """Route ``mech.perturb`` through the combiner; False (nothing done) for a mechanism with its own
        ``perturb`` (contextual ones: ``perturb_many`` would call it text by text anyway)."""
        if type(mech).perturb is not Mechanism.perturb or "perturb" in vars(mech):
            return "perturb" in vars(mech)
        original = mech.perturb

        def perturb(text, *, rng=None, dp_only=False, **kw):
            if kw or not getattr(self.local, "inside", False) or getattr(self.local, "flushing", False):
                return original(text, rng=rng, dp_only=dp_only, **kw)
            return self._park(mech, _Job(text, rng, dp_only))

        mech.perturb = perturb
        return True

    def _park(self, mech, job: _Job):
        """Wait for a flush to serve ``job``. A flush runs once every thread inside is parked or was served
        by an earlier flush and has not come back yet: threads still finishing an earlier batch's work do
        not hold back the next batch, threads queued for the lock (new requests) do."""
        self.parked.append((mech, job))
        with self.count_lock:
            self.served -= self._was_served()
            ready = len(self.parked) == self.inside - self.served
        if ready:
            self._flush()
        else:
            while not job.done:
                self.cond.wait()  # releases the big lock so that queued requests can park too
        self.local.served = True  # counted in `served` by the flush that served the job
        if job.error is not None:
            raise job.error
        return job.result

    def _flush(self) -> None:
        """Serve every parked job (big lock held): one ``perturb_many`` per mechanism and generator."""
        parked, self.parked = self.parked, []
        with self.count_lock:
            self.served += len(parked)
        groups: dict[tuple[int, int, bool], list[tuple[object, _Job]]] = {}
        for mech, job in parked:  # one call per mechanism, generator and span rule (detected spans: DP only)
            gen = 0 if self.rng is not None else id(job.rng)
            groups.setdefault((id(mech), gen, job.dp_only), []).append((mech, job))
        self.local.flushing = True
        try:
            for group in groups.values():
                self._serve(group)
        finally:
            self.local.flushing = False
            for _, job in parked:  # fail closed: no parked thread waits forever or goes on without a result
                if not job.done:
                    job.error, job.done = PrivacyError("batched perturbation failed; nothing was sent"), True
            self.cond.notify_all()

    def _serve(self, group: list[tuple[object, _Job]]) -> None:
        mech, dp_only = group[0][0], group[0][1].dp_only
        rng = self.rng if self.rng is not None else group[0][1].rng
        results, merged = perturb_isolated(mech, [job.text for _, job in group], rng, dp_only)
        if merged:
            self.calls += 1
            self.texts += len(group)
        for (_, job), res in zip(group, results):  # an exception is raised in the job's own thread
            if isinstance(res, Exception):
                job.error = res
            else:
                job.result = res
            job.done = True


def perturb_isolated(mech, texts: list[str], rng, dp_only: bool) -> tuple[list, bool]:
    """One ``perturb_many`` over ``texts``; if it raises (or returns another count), each text on its own, so a
    failing text fails alone. Per text its PerturbResult or the exception it raised, and whether the merged
    call served them all."""
    try:
        results = mech.perturb_many(texts, rng=rng, dp_only=dp_only)
        if len(results) != len(texts):
            raise RuntimeError("perturb_many returned a different number of results")
        return results, True
    except Exception:  # noqa: BLE001 - isolate the failing text
        out = []
        for text in texts:
            try:
                out.append(mech.perturb_many([text], rng=rng, dp_only=dp_only)[0])
            except Exception as exc:  # noqa: BLE001 - that text's own failure
                out.append(exc)
        return out, False


def attach(sanitizer, shared_rng: bool) -> Combiner | None:
    """Batch ``sanitizer``'s mechanism calls; None when its mechanism cannot be batched. Idempotent.

    Uses the Sanitizer's ``_lock`` (a ``with``-able lock around each ``sanitize`` call) as the hook."""
    if isinstance(sanitizer._lock, Combiner):
        return sanitizer._lock
    combiner = Combiner(shared_rng)
    if not combiner.install(sanitizer.mechanism):
        return None
    sanitizer._lock = combiner
    return combiner
