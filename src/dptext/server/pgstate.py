"""Shared state of several proxy replicas in PostgreSQL: the memo and the ε ledger (``state: postgresql://...``).

Tables (created by the migrations below, version checked at start-up):

* ``dptext_memo (k bytea, text, owner, created)``: ``k`` is the memo's HMAC key
  (:mod:`dptext.privacy.memo`), ``text`` the perturbed text already released,
  or NULL while a replica perturbs it (a single-flight claim owned by
  ``owner``). Nothing raw is stored.
* ``dptext_spend (key, ts, eps)``: one row per charged request, kept for the
  budget window; ``dptext_totals (key, total)``: each key's running total.
* ``dptext_schema (version)``: one row; a different version stops start-up.

Budget check and charge are one transaction: the key's ``dptext_totals`` row
is locked (``SELECT ... FOR UPDATE``), the window summed, the charge inserted
and the total raised, then COMMIT. Two replicas charging one key serialise on
that row lock, so they cannot both pass a check that only one charge fits.
The charge commits before the request goes upstream, so a replica killed
after it loses no charge.

A connection or query failure raises :class:`~dptext.privacy.flight.StateError`
(the request fails closed, 503); at start-up it is a one-line
:class:`~dptext.errors.DPTextError`. The connection pool, the migrations and
the start-up check are in :mod:`dptext.server._pgpool` (re-exported here).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections import deque
from contextlib import nullcontext

from dptext.privacy.accounting import HISTORY, BudgetExceeded, Charge
from dptext.privacy.flight import Flights, StateError
from dptext.privacy.memo import PRUNE_EVERY, Memo, Staged
# connections and schema live in _pgpool; re-exported: state.py and callers import them from here
from dptext.server._pgpool import (MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION, Pool,  # noqa: F401
                                   _line, _where, is_postgres_url, open_pool)


class PgMemo(Memo):
    """The memo in PostgreSQL, shared by replicas, with cross-replica single-flight claims (pending rows)."""

    def __init__(self, pool: Pool, secret: bytes, *, max_entries: int = 100_000, max_age_s: float = 30 * 86400,
                 pending_s: float = 60.0, clock=time.time) -> None:
        if len(secret) < 16:
            raise ValueError("memo secret must be at least 16 bytes")
        self.pool, self.secret = pool, secret
        self.max_entries, self.max_age_s, self.pending_s = int(max_entries), float(max_age_s), float(pending_s)
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.lock = threading.Lock()
        self._puts = 0
        self.flights = Flights(self, wait_s=pending_s)
        self.prune()

    def get(self, key: bytes) -> str | None:
        with self.pool.tx() as c:
            row = c.execute("SELECT text FROM dptext_memo WHERE k = %s AND text IS NOT NULL AND created >= %s",
                            (key, self.clock() - self.max_age_s)).fetchone()
        return row[0] if row else None

    def claim(self, key: bytes) -> tuple[str, str | None]:
        """Insert a pending row (mine), or read the row: a fresh text (hit), someone else's live claim (busy)."""
        now = self.clock()
        with self.pool.tx() as c:
            if c.execute("INSERT INTO dptext_memo (k, text, owner, created) VALUES (%s, NULL, %s, %s) "
                         "ON CONFLICT (k) DO NOTHING RETURNING k", (key, self.owner, now)).fetchone():
                return "mine", None
            row = c.execute("SELECT text, created FROM dptext_memo WHERE k = %s FOR UPDATE", (key,)).fetchone()
            if row is None:  # deleted meanwhile (a dropped claim): look again
                return "busy", None
            text, created = row
            if text is not None and created >= now - self.max_age_s:
                return "hit", text
            if text is None and created >= now - self.pending_s:
                return "busy", None
            # an expired entry, or a claim whose owner died: take it over
            c.execute("UPDATE dptext_memo SET text = NULL, owner = %s, created = %s WHERE k = %s",
                      (self.owner, now, key))
            return "mine", None

    def finish(self, done: dict[bytes, str], dropped: list[bytes]) -> None:
        """Fill this replica's claims with their texts and delete the dropped ones, in one transaction.

        A claim taken over meanwhile (held past ``pending_s``) cannot be filled: StateError, nothing is sent.
        """
        now = self.clock()
        with self.pool.tx() as c:
            for k, text in done.items():
                cur = c.execute("UPDATE dptext_memo SET text = %s, created = %s WHERE k = %s AND owner = %s "
                                "AND text IS NULL", (text, now, k, self.owner))
                if cur.rowcount != 1:
                    raise StateError("a single-flight claim was taken over by another replica (held too long)")
            for k in dropped:
                c.execute("DELETE FROM dptext_memo WHERE k = %s AND owner = %s AND text IS NULL", (k, self.owner))
        self._count(len(done))

    def put_many(self, items) -> None:
        items = list(items)
        if not items:
            return
        now = self.clock()
        with self.pool.tx() as c:
            for k, text in items:
                c.execute("INSERT INTO dptext_memo (k, text, owner, created) VALUES (%s, %s, %s, %s) "
                          "ON CONFLICT (k) DO NOTHING", (k, text, self.owner, now))
        self._count(len(items))

    def _count(self, n: int) -> None:
        with self.lock:
            self._puts += n
            due = self._puts >= PRUNE_EVERY
        if due:
            self.prune()

    def prune(self) -> None:
        """Delete entries past ``max_age_s`` and dead claims, then the oldest entries beyond ``max_entries``."""
        with self.lock:
            self._puts = 0
        now = self.clock()
        with self.pool.tx() as c:
            c.execute("DELETE FROM dptext_memo WHERE (text IS NOT NULL AND created < %s) OR "
                      "(text IS NULL AND created < %s)", (now - self.max_age_s, now - 10 * self.pending_s))
            (n,) = c.execute("SELECT count(*) FROM dptext_memo WHERE text IS NOT NULL").fetchone()
            if n > self.max_entries:
                c.execute("DELETE FROM dptext_memo WHERE k IN (SELECT k FROM dptext_memo WHERE text IS NOT NULL "
                          "ORDER BY created LIMIT %s)", (n - self.max_entries,))

    def __len__(self) -> int:
        with self.pool.tx() as c:
            return c.execute("SELECT count(*) FROM dptext_memo WHERE text IS NOT NULL").fetchone()[0]

    def staged(self) -> Staged:
        return Staged(self)

    def batch(self):
        return nullcontext()  # each write is its own transaction: replicas see it at once

    def close(self) -> None:
        pass  # the pool is closed by the ledger's owner (Services)


class PgLedger:
    """The ε ledger in PostgreSQL (the :class:`~dptext.privacy.accounting.Accountant` interface)."""

    def __init__(self, pool: Pool, *, window_s: float = 86400.0, budgets: dict[str, float | None] | None = None,
                 default_budget: float | None = None, clock=time.time) -> None:
        self.pool, self.window_s = pool, float(window_s)
        self.budgets, self.default_budget, self.clock = dict(budgets or {}), default_budget, clock
        self._pruned = 0.0

    def budget_of(self, key: str) -> float | None:
        return self.budgets.get(key, self.default_budget)

    def batch(self):
        return nullcontext()  # each charge is its own transaction on the key's row

    def charge(self, key: str, epsilon: float) -> Charge:
        """Check the budget and charge ``epsilon`` in one transaction (the key's total row locked)."""
        epsilon, budget, now = float(epsilon), self.budget_of(key), self.clock()
        since = now - self.window_s
        with self.pool.tx() as c:
            if epsilon > 0:
                c.execute("INSERT INTO dptext_totals (key, total) VALUES (%s, 0) ON CONFLICT (key) DO NOTHING",
                          (key,))
                (total,) = c.execute("SELECT total FROM dptext_totals WHERE key = %s FOR UPDATE", (key,)).fetchone()
            else:
                row = c.execute("SELECT total FROM dptext_totals WHERE key = %s", (key,)).fetchone()
                total = row[0] if row else 0.0
            (spent,) = c.execute("SELECT coalesce(sum(eps), 0) FROM dptext_spend WHERE key = %s AND ts > %s",
                                 (key, since)).fetchone()
            if budget is not None and epsilon > 0 and spent + epsilon > budget + 1e-9:
                rows = c.execute("SELECT ts, eps FROM dptext_spend WHERE key = %s AND ts > %s ORDER BY ts",
                                 (key, since)).fetchall()
                raise BudgetExceeded(key, epsilon, spent, budget, self.window_s,
                                     _retry_after(rows, spent, epsilon, budget, now, self.window_s))
            if epsilon > 0:
                c.execute("INSERT INTO dptext_spend (key, ts, eps) VALUES (%s, %s, %s)", (key, now, epsilon))
                c.execute("UPDATE dptext_totals SET total = total + %s WHERE key = %s", (epsilon, key))
                total += epsilon
                if now - self._pruned > min(self.window_s, 60.0):
                    self._pruned = now
                    c.execute("DELETE FROM dptext_spend WHERE key = %s AND ts <= %s", (key, since))
        return Charge(epsilon, total, spent + epsilon, budget)

    def total(self, key: str) -> float:
        with self.pool.tx() as c:
            row = c.execute("SELECT total FROM dptext_totals WHERE key = %s", (key,)).fetchone()
        return row[0] if row else 0.0

    def snapshot(self) -> dict[str, dict]:
        """Per key: running total, spent in the window, budget, and (time, total) points of the window's charges."""
        since = self.clock() - self.window_s
        with self.pool.tx() as c:
            totals = dict(c.execute("SELECT key, total FROM dptext_totals").fetchall())
            rows = c.execute("SELECT key, ts, eps FROM dptext_spend WHERE ts > %s ORDER BY ts", (since,)).fetchall()
        per: dict[str, list] = {}
        for key, ts, eps in rows:
            per.setdefault(key, []).append((ts, eps))
        out = {}
        for key, total in totals.items():
            charges = per.get(key, [])
            window = sum(e for _, e in charges)
            hist, run = deque(maxlen=HISTORY), total - window  # running total before the window's first charge
            for ts, eps in charges:
                run += eps
                hist.append([ts, run])
            out[key] = {"epsilon_spent": total, "epsilon_window": window, "budget": self.budget_of(key),
                        "epsilon_history": list(hist)}
        return out

    def close(self) -> None:
        self.pool.close()


def _retry_after(rows, spent: float, cost: float, budget: float, now: float, window_s: float) -> float:
    """Seconds until the window's oldest charges have aged out far enough for ``cost`` to fit."""
    if cost > budget:
        return window_s
    for ts, eps in rows:
        spent -= eps
        if spent + cost <= budget + 1e-9:
            return max(0.0, ts + window_s - now)
    return window_s
