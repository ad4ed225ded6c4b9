"""Single-flight over the memo: concurrent requests for one private segment wait for one perturbation.

Without it, N requests carrying the same private text at the same moment all
miss the memo, are all perturbed afresh and all charged: N independent draws,
N·ε released on one text. With it, the first request *claims* the segment's
memo key; the others wait until the claim ends and then replay its result
(a memo hit, no ε). A claim ends when the owner's request is charged (the
text is stored) or refused (the claim is dropped and one waiter claims next).

Two layers:

* in this process, a map ``key -> Event`` of the keys being perturbed here;
* across processes, the store's own claim (:meth:`claim` of the store):
  SQLite answers hit or mine (one process per file), PostgreSQL inserts a
  pending row (``INSERT ... ON CONFLICT DO NOTHING``) so a second replica sees
  the key busy and polls until the row is filled or dropped; a pending row
  older than ``pending_s`` (its owner died) may be taken over.

Keys are claimed in sorted order before the request enters the perturbation
gate, so two requests sharing several segments cannot wait on each other in a
cycle, and no waiter ever holds a perturbation slot.
"""

from __future__ import annotations

import threading
import time


class StateError(Exception):
    """The state store (memo or ε ledger) cannot be read or written; the request fails closed."""


class Flights:
    """In-process single-flight map over a store with ``claim(key) -> ("hit", text) | ("mine"|"busy", None)``
    and ``finish(done: dict[key, text], dropped: list[key])``."""

    def __init__(self, store, *, wait_s: float = 60.0, poll_s: float = 0.02) -> None:
        self.store = store
        self.wait_s = float(wait_s)
        self.poll_s = float(poll_s)
        self.lock = threading.Lock()
        self.owners: dict[bytes, threading.Event] = {}
        self.claims = 0  # store claims won (each one is a fresh perturbation): the tests count them

    def acquire(self, keys, *, wait: bool = True) -> tuple[dict[bytes, str], list[bytes]] | None:
        """Per key: its stored text (``hits``), or a claim the caller holds until :meth:`release`.

        ``wait=False``: None (and nothing held) when any key is being perturbed by another request, here or
        (``busy``) in another replica, for a caller that must not block (a batch driver holding other
        requests' claims: waiting there could close a cycle)."""
        hits: dict[bytes, str] = {}
        mine: list[bytes] = []
        deadline = time.monotonic() + self.wait_s
        try:
            for k in sorted(set(keys)):
                if not self._one(k, hits, mine, deadline, wait):
                    self.release({}, mine)
                    return None
        except BaseException:
            self.release({}, mine)
            raise
        return hits, mine

    def _one(self, k: bytes, hits: dict, mine: list, deadline: float, wait: bool) -> bool:
        """Claim or replay ``k``; False (nothing held for ``k``) when another holds it and ``wait`` is off."""
        while True:
            with self.lock:
                ev = self.owners.get(k)
                if ev is None:
                    self.owners[k] = threading.Event()
            if ev is not None:  # another request of this process perturbs k: wait for it, then look again
                if not wait:
                    return False
                if not ev.wait(max(0.0, deadline - time.monotonic())):
                    raise StateError("timed out waiting for a concurrent perturbation of the same text")
                continue
            try:
                while True:
                    status, text = self.store.claim(k)
                    if status != "busy":
                        break
                    if not wait:
                        self._wake([k])
                        return False
                    if time.monotonic() > deadline:
                        raise StateError("timed out waiting for another replica's perturbation of the same text")
                    time.sleep(self.poll_s)
            except BaseException:
                self._wake([k])
                raise
            if status == "hit":
                hits[k] = text
                self._wake([k])
            else:
                self.claims += 1
                mine.append(k)
            return True

    def release(self, done: dict[bytes, str], claimed: list[bytes]) -> None:
        """Store ``done`` texts, drop the other claims, and wake this process's waiters (always, even on error)."""
        try:
            if claimed:
                self.store.finish({k: done[k] for k in claimed if k in done},
                                  [k for k in claimed if k not in done])
        finally:
            self._wake(claimed)

    def _wake(self, keys) -> None:
        with self.lock:
            evs = [self.owners.pop(k, None) for k in keys]
        for ev in evs:
            if ev is not None:
                ev.set()
