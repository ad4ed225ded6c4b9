"""The perturbation process's batch driver: the requests that arrived together, perturbed together, in one thread.

In the child process (``limits.perturb_process: true``) requests come from
one pipe. The driver takes every request already waiting there (at most
:data:`dptext.server.scheduler.BATCH`) and, holding the Sanitizer's lock:

1. prepares each one (:meth:`~dptext.server.privacy.Perturber.prepare`: its
   plan, unit limit, memo replays and single-flight claims, taken without
   waiting);
2. makes the mechanism calls of all of them as one
   :meth:`~dptext.mechanisms.base.Mechanism.perturb_many` per mechanism and
   span rule, from one generator (OS entropy);
3. finishes each one (its own report), then charges it and commits its memo
   writes as the threaded path does (:func:`charge_and_commit`), all inside one
   ledger transaction and one memo transaction for the batch (the ledger
   commits first), and only then sends the replies: a reply never leaves
   before its charge is on disk.

Why: the threaded path gives each request a thread and merges their mechanism
calls through a combining lock; with 50 requests in flight the thread hand-offs
and lock wake-ups cost about as much CPU as the Python work of a request. One
thread doing the same steps in a loop spends none of it.

What stays with the threaded path (the process's worker threads, which wait):
a request one of whose texts is being perturbed by another request now (here,
e.g. its twin earlier in the same batch, or in another replica) waits there for
that perturbation and replays it, so single-flight is unchanged. The driver
never waits for a claim while holding others, so no cycle can form.
Randomness: every text's noise comes from the driver's generator, with the same
law per text as ``perturb`` (``perturb_many``); a configured ``privacy.seed``
(tests) keeps the threaded path, whose output does not depend on neighbours.

Fail closed per request: an error in one request's steps is that request's
error reply; if a merged mechanism call raises, each of its texts is perturbed
on its own and only the requests whose own text fails get an error.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np

from dptext.errors import PrivacyError
from dptext.server.batching import perturb_isolated
from dptext.server.privacy import charge_and_commit


class BatchDriver:
    def __init__(self, perturber, accountant, reply, defer) -> None:
        """``reply(rid, perturbed, charge, timing)`` / ``reply(rid, exc)`` sends one answer;
        ``defer(msg)`` hands a request to the threaded (waiting) path."""
        self.perturber, self.accountant = perturber, accountant
        self.reply, self.defer = reply, defer
        self.rng = np.random.default_rng()
        self.calls = 0  # perturb_many calls made (tests and the benchmark)

    def run(self, msgs: list[tuple]) -> None:
        """Serve ``msgs`` (``(rid, request, key, submitted)`` each); every one gets exactly one reply."""
        start = time.perf_counter()
        ready, deferred, done = [], [], []
        with self.perturber.sanitizer._lock:
            for msg in msgs:
                try:
                    prep = self.perturber.prepare(msg[1], msg[2])
                except BaseException as exc:  # noqa: BLE001 - this request's own error (400, 413, 503...)
                    self.reply(msg[0], exc)
                    continue
                (deferred if prep is None else ready).append((msg, prep))
            outcomes = self._perturb([prep for _, prep in ready])
            for (msg, prep), got in zip(ready, outcomes):
                try:
                    if isinstance(got, BaseException):
                        raise got
                    done.append((msg, self.perturber.complete(prep, got)))
                except BaseException as exc:  # noqa: BLE001
                    if prep.staged is not None:
                        prep.staged.abort()
                    self.reply(msg[0], exc)
        took = time.perf_counter() - start
        for msg, _ in deferred:
            self.defer(msg)
        memo = self.perturber.memo
        charged = []
        try:  # one transaction per store for the batch: the ledger commits first, then the memo
            with memo.batch() if memo is not None else nullcontext(), self.accountant.batch():
                for msg, perturbed in done:
                    try:
                        charged.append((msg, perturbed, charge_and_commit(self.accountant, perturbed, msg[2])))
                    except BaseException as exc:  # noqa: BLE001 - 429, or the state failing: nothing is sent
                        self.reply(msg[0], exc)
        except BaseException as exc:  # noqa: BLE001 - a commit failed: none of the batch is sent
            for msg, _, _ in charged:
                self.reply(msg[0], exc)
            return
        for msg, perturbed, charge in charged:  # replies only once every charge is committed
            self.reply(msg[0], perturbed, charge, {"queue": start - msg[3], "perturb": took})

    def _perturb(self, preps: list) -> list:
        """Per prepared request: the results of its draft's jobs, or the exception that stops it."""
        groups: dict = {}
        for pi, prep in enumerate(preps):
            for ji, (mech, text, dp_only) in enumerate(prep.draft.jobs):
                groups.setdefault((id(mech), dp_only), (mech, dp_only, []))[2].append((pi, ji, text))
        out = [[None] * len(prep.draft.jobs) for prep in preps]
        failed: dict[int, BaseException] = {}
        for mech, dp_only, items in groups.values():
            results, merged = perturb_isolated(mech, [t for _, _, t in items], self.rng, dp_only)
            self.calls += merged
            for (pi, ji, _), res in zip(items, results):
                if isinstance(res, Exception):
                    failed.setdefault(pi, PrivacyError(f"perturbation failed ({type(res).__name__}); "
                                                       "nothing was sent"))
                out[pi][ji] = res
        return [failed.get(pi, out[pi]) for pi in range(len(preps))]
