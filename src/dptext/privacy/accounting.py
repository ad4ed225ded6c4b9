"""Privacy accounting per API key: ε spent on new private content, composed over requests.

Composition is basic (sequential) composition of the per-unit guarantee. A
request that freshly perturbed private units with an ε-per-unit mechanism
spends ``ε_r = ε`` (what the core's report calls ``epsilon_spent``; 0 when
every private segment was replayed from the memo, :mod:`dptext.privacy.memo`),
and a key's running total is

    ε_total = Σ_r ε_r

which bounds the privacy loss of any one private unit over all the key's
requests: a unit sent in k fresh requests has spent at most k·ε. Basic
composition holds for any adaptive sequence of releases and is loose
(advanced composition would give less for large k), the safe side for a budget.
The accountant itself adds whatever ε it is charged.

A budget ``B`` per key over a sliding window of ``W`` seconds is optional. A
request is admitted when ``Σ_{r in window} ε_r + ε_request ≤ B``; otherwise
:class:`BudgetExceeded` carries the seconds until enough of the window's
spending has aged out. The check and the charge are one atomic step, so
concurrent requests cannot overshoot together. The window's sum is kept
running (added on a charge, subtracted when a charge ages out) and re-summed
exactly every ``RESUM_EVERY`` updates, so a charge costs O(1) however many
requests the window holds, and rounding cannot drift.

State lives in SQLite (one row per charged request, and a running total per
key), so totals and windows survive a restart; the window's rows are also
kept in memory, so a charge costs one insert whatever the traffic. Rows older
than the window are deleted; the running total keeps their sum.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dptext.privacy.flight import StateError

HISTORY = 512  # (time, running total) points kept per key for the dashboard
RESUM_EVERY = 4096  # running window sums are recomputed exactly after this many updates


class BudgetExceeded(Exception):
    def __init__(self, key: str, cost: float, spent: float, budget: float, window_s: float,
                 retry_after: float) -> None:
        self.key, self.cost, self.spent, self.budget = key, cost, spent, budget
        self.window_s, self.retry_after = window_s, retry_after
        super().__init__(f"privacy budget of key '{key}' exhausted: this request needs ε = {cost:g}, "
                         f"{spent:g} of {budget:g} already spent in the last {window_s:g} s")


@dataclass(frozen=True)
class Charge:
    epsilon: float  # this request
    total: float  # the key's running total, all time
    window: float  # spent in the current window (== total without a window)
    budget: float | None


class Accountant:
    """Per-key basic composition with optional windowed budgets (thread-safe)."""

    def __init__(self, path: str | os.PathLike | None, *, window_s: float = 86400.0,
                 budgets: dict[str, float | None] | None = None, default_budget: float | None = None,
                 clock=time.time) -> None:
        self.window_s = float(window_s)
        self.budgets = dict(budgets or {})
        self.default_budget = default_budget
        self.clock = clock
        self.lock = threading.RLock()  # re-entered by the thread holding a batch()
        self._batch, self._failed = False, None
        target = ":memory:"
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            target = str(path)
        self.db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        if path is not None:
            os.chmod(target, 0o600)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS spend (key TEXT NOT NULL, ts REAL NOT NULL, eps REAL NOT NULL)")
        self.db.execute("CREATE INDEX IF NOT EXISTS spend_key_ts ON spend (key, ts)")
        self.db.execute("CREATE TABLE IF NOT EXISTS totals (key TEXT PRIMARY KEY, total REAL NOT NULL)")
        self.history: dict[str, deque] = {}
        now = self.clock()
        self.db.execute("DELETE FROM spend WHERE ts <= ?", (now - self.window_s,))
        self.totals = dict(self.db.execute("SELECT key, total FROM totals").fetchall())
        for key, total in self.totals.items():
            self.history[key] = deque([(now, total)], maxlen=HISTORY)
        self.windows: dict[str, deque] = {}  # key -> (ts, eps) of the charges inside the window, oldest first
        for key, ts, eps in self.db.execute("SELECT key, ts, eps FROM spend ORDER BY ts"):
            self.windows.setdefault(key, deque()).append((ts, eps))
        self.sums = {key: [sum(e for _, e in rows), 0] for key, rows in self.windows.items()}  # [sum, updates]
        self._pruned = now

    def budget_of(self, key: str) -> float | None:
        return self.budgets.get(key, self.default_budget)

    def _window(self, key: str, now: float) -> tuple[deque, float]:
        """The key's charges inside the window ending at ``now`` (older ones dropped from memory), and their sum."""
        rows = self.windows.setdefault(key, deque())
        acc = self.sums.setdefault(key, [0.0, 0])
        while rows and rows[0][0] <= now - self.window_s:
            acc[0] -= rows.popleft()[1]
            acc[1] += 1
        if acc[1] >= RESUM_EVERY or not rows:
            acc[0], acc[1] = sum(e for _, e in rows), 0
        return rows, acc[0]

    def _add(self, key: str, now: float, epsilon: float) -> None:
        self.windows[key].append((now, epsilon))
        acc = self.sums[key]
        acc[0] += epsilon
        acc[1] += 1

    def charge(self, key: str, epsilon: float) -> Charge:
        """Add ``epsilon`` to ``key`` (admitted only within its budget; raises :class:`BudgetExceeded`)."""
        epsilon = float(epsilon)
        budget = self.budget_of(key)
        with self.lock:
            now = self.clock()
            rows, spent = self._window(key, now)
            if budget is not None and epsilon > 0 and spent + epsilon > budget + 1e-9:
                raise BudgetExceeded(key, epsilon, spent, budget, self.window_s,
                                     self._retry_after(rows, spent, epsilon, budget, now))
            total = self.totals.get(key, 0.0) + epsilon
            if epsilon > 0:
                self._write(key, now, epsilon, total)
                self._add(key, now, epsilon)
                self.totals[key] = total
                self.history.setdefault(key, deque(maxlen=HISTORY)).append((now, total))
            return Charge(epsilon, total, spent + epsilon, budget)

    @contextmanager
    def batch(self):
        """The charges inside are written in one transaction, committed on exit, while other threads wait: one
        commit for a batch of requests instead of one each. Reply to none of them before it returns. If any
        write or the commit fails, it raises StateError (every charge of the batch stays counted in memory,
        so the ledger only ever errs high)."""
        with self.lock:
            self._batch = True
            try:
                yield
            finally:
                self._batch, failed = False, self._failed
                self._failed = None
                try:
                    if self.db.in_transaction:
                        self.db.execute("COMMIT")
                except sqlite3.Error as exc:
                    if self.db.in_transaction:
                        self.db.execute("ROLLBACK")
                    failed = failed or exc
            if failed is not None:
                raise StateError(f"privacy ledger write failed: {failed}")

    def _write(self, key: str, now: float, epsilon: float, total: float) -> None:
        """One transaction: the charge's row and the key's new total (a failed write raises StateError); in a
        :meth:`batch`, part of the batch's transaction."""
        try:
            if not self.db.in_transaction:
                self.db.execute("BEGIN")
            self.db.execute("INSERT INTO spend (key, ts, eps) VALUES (?, ?, ?)", (key, now, epsilon))
            self.db.execute("INSERT INTO totals (key, total) VALUES (?, ?) ON CONFLICT(key) "
                            "DO UPDATE SET total = excluded.total", (key, total))
            if now - self._pruned > min(self.window_s, 60.0):
                self.db.execute("DELETE FROM spend WHERE ts <= ?", (now - self.window_s,))
                self._pruned = now
            if not self._batch:
                self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")  # in a batch, its earlier charges too: the batch fails
            if self._batch:
                self._failed = exc
            raise StateError(f"privacy ledger write failed: {exc}") from None

    def _retry_after(self, rows, spent: float, cost: float, budget: float, now: float) -> float:
        """Seconds until the window's oldest charges have aged out far enough for ``cost`` to fit."""
        if cost > budget:
            return self.window_s
        for ts, eps in rows:
            spent -= eps
            if spent + cost <= budget + 1e-9:
                return max(0.0, ts + self.window_s - now)
        return self.window_s

    def total(self, key: str) -> float:
        with self.lock:
            return self.totals.get(key, 0.0)

    def snapshot(self) -> dict[str, dict]:
        """Per key: running total, spent in the window, budget, and the (time, total) history."""
        with self.lock:
            now = self.clock()
            out = {}
            for key, total in self.totals.items():
                window = self._window(key, now)[1]
                out[key] = {"epsilon_spent": total, "epsilon_window": window, "budget": self.budget_of(key),
                            "epsilon_history": [[t, v] for t, v in self.history.get(key, ())]}
            return out

    def close(self) -> None:
        with self.lock:
            self.db.close()
