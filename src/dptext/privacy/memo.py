"""Consistent perturbation: the same private text from the same scope gets the same perturbed text.

Why: chat clients resend the whole history on every turn, and SDKs retry
failed calls. If each copy of a private segment were perturbed afresh, the
remote side would collect many independent draws of one text and could vote
position by position; k draws of an ε-DP mechanism compose to k·ε. Replaying
the first draw for every copy releases nothing new, so the copies cost no ε.

Keys are ``HMAC-SHA256(secret, scope ‖ settings ‖ text)``: the database never
holds raw text, and without the secret a key cannot be tested against a guess.
The secret is the server's (``memo.secret``, or a random 256-bit value created
once beside the database with mode 0600). Stored values are perturbed text,
which is what already went upstream.

Storage is SQLite (WAL), so the memo survives a restart, with two bounds:
entries older than ``max_age_s`` are never returned and are deleted, and
beyond ``max_entries`` the oldest are deleted first. An evicted segment is
perturbed afresh next time and charged again by the accountant.

Protocol used by the sanitiser: ``key(scope, settings, text) -> bytes``,
``get(key) -> str | None``, ``put(key, text)``. :meth:`Memo.staged` buffers
puts until :meth:`Staged.commit`, so a request refused after perturbation
(e.g. over its ε budget) leaves nothing behind that could later be released
without being charged. :meth:`Staged.acquire` claims the request's keys first
(single-flight, :mod:`dptext.privacy.flight`): a text another request is
perturbing right now is waited for and replayed, not perturbed again.

A failing database (disk full, file unwritable) raises
:class:`~dptext.privacy.flight.StateError`: the caller fails closed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from dptext.privacy.flight import Flights, StateError

PRUNE_EVERY = 256  # puts between two size/age prunes


@contextmanager
def _db_errors(what: str):
    """sqlite3 errors (disk full, read-only file, corrupt database) as one :class:`StateError` line."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StateError(f"{what}: {exc}") from None


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))


def load_secret(path: Path) -> bytes:
    """The HMAC secret stored at ``path`` (created with 32 random bytes, mode 0600, when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        data = path.read_bytes()
        if len(data) < 32:
            raise ValueError(f"memo secret file {path} is shorter than 32 bytes") from None
        return data
    with os.fdopen(fd, "wb") as f:
        data = secrets.token_bytes(32)
        f.write(data)
    return data


class Memo:
    """HMAC-keyed, size- and age-bounded store of perturbed segments in SQLite (thread-safe)."""

    _settings_json = None  # (settings, their canonical JSON), see key()

    def __init__(self, path: str | os.PathLike, secret: bytes, *, max_entries: int = 100_000,
                 max_age_s: float = 30 * 86400, clock=time.time) -> None:
        if len(secret) < 16:
            raise ValueError("memo secret must be at least 16 bytes")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.secret = secret
        self.max_entries = int(max_entries)
        self.max_age_s = float(max_age_s)
        self.clock = clock
        self.lock = threading.RLock()  # re-entered by the thread holding a batch()
        self.db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        os.chmod(self.path, 0o600)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS memo (k BLOB PRIMARY KEY, text TEXT NOT NULL, "
                        "created REAL NOT NULL)")
        self.db.execute("CREATE INDEX IF NOT EXISTS memo_created ON memo (created)")
        self._puts = 0
        self.flights = Flights(self)
        self.prune()

    def key(self, scope: str, settings: dict, text: str) -> bytes:
        """``HMAC-SHA256(secret, json([scope, settings, text]))`` (canonical JSON, sorted keys).

        The settings' JSON is computed once per settings object (they do not change while a server runs)
        and spliced between the scope's and the text's: the same bytes as encoding the whole list."""
        cached = self._settings_json
        if cached is None or cached[0] is not settings:
            cached = self._settings_json = (settings, _canonical(settings))
        msg = "[" + _canonical(scope) + "," + cached[1] + "," + _canonical(text) + "]"
        return hmac.new(self.secret, msg.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    def get(self, key: bytes) -> str | None:
        with self.lock, _db_errors("memo read failed"):
            row = self.db.execute("SELECT text, created FROM memo WHERE k = ?", (key,)).fetchone()
        if row is None or row[1] < self.clock() - self.max_age_s:
            return None
        return row[0]

    def put(self, key: bytes, text: str) -> None:
        self.put_many([(key, text)])

    def put_many(self, items) -> None:
        """Store ``(key, text)`` pairs; an existing key keeps its first value (the one already released)."""
        items = list(items)
        if not items:
            return
        now = self.clock()
        with self.lock, _db_errors("memo write failed"):
            self.db.executemany("INSERT OR IGNORE INTO memo (k, text, created) VALUES (?, ?, ?)",
                                [(k, t, now) for k, t in items])
            self._puts += len(items)
            due = self._puts >= PRUNE_EVERY
        if due:
            self.prune()

    @contextmanager
    def batch(self):
        """The writes inside are one transaction, committed on exit and rolled back on an error, while other
        threads wait: one commit for a batch of requests instead of one each."""
        with self.lock:
            with _db_errors("memo write failed"):
                self.db.execute("BEGIN")
            try:
                yield
            except BaseException:
                if self.db.in_transaction:  # SQLite may have rolled back already (a full disk)
                    self.db.execute("ROLLBACK")
                raise
            try:
                with _db_errors("memo write failed"):
                    self.db.execute("COMMIT")
            except StateError:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    def claim(self, key: bytes) -> tuple[str, str | None]:
        """Single-flight's store claim: ``("hit", text)`` or ``("mine", None)`` (one process per SQLite file)."""
        text = self.get(key)
        return ("hit", text) if text is not None else ("mine", None)

    def finish(self, done: dict[bytes, str], dropped: list[bytes]) -> None:
        """End claims: store the perturbed ``done`` texts (nothing to undo for ``dropped`` in SQLite)."""
        self.put_many(done.items())

    def prune(self) -> None:
        """Delete entries past ``max_age_s``, then the oldest beyond ``max_entries``."""
        with self.lock, _db_errors("memo prune failed"):
            self._puts = 0
            self.db.execute("DELETE FROM memo WHERE created < ?", (self.clock() - self.max_age_s,))
            (n,) = self.db.execute("SELECT COUNT(*) FROM memo").fetchone()
            if n > self.max_entries:
                self.db.execute("DELETE FROM memo WHERE k IN (SELECT k FROM memo ORDER BY created LIMIT ?)",
                                (n - self.max_entries,))

    def __len__(self) -> int:
        with self.lock:
            return self.db.execute("SELECT COUNT(*) FROM memo").fetchone()[0]

    def staged(self) -> Staged:
        return Staged(self)

    def close(self) -> None:
        with self.lock:
            self.db.close()


class Staged:
    """The memo protocol over a memo store, holding puts back until :meth:`commit`.

    ``get`` sees this request's own pending puts, so a text repeated inside one
    request is perturbed once; keys claimed by :meth:`acquire` read as misses
    (this request perturbs them), keys another request perturbed meanwhile as hits.
    :meth:`commit` or :meth:`abort` must follow :meth:`acquire` (they end the claims).
    """

    def __init__(self, memo) -> None:
        self.memo = memo
        self.pending: dict[bytes, str] = {}
        self.found: dict[bytes, str] = {}  # replayed by acquire
        self.claimed: list[bytes] = []
        self.hits = 0

    def key(self, scope: str, settings: dict, text: str) -> bytes:
        return self.memo.key(scope, settings, text)

    def acquire(self, keys, *, wait: bool = True) -> bool:
        """Claim ``keys`` (waiting for any that another request is perturbing now); see the module doc.
        ``wait=False``: False, and nothing claimed, when another request holds one of them."""
        got = self.memo.flights.acquire(keys, wait=wait)
        if got is None:
            return False
        self.found.update(got[0])
        self.claimed.extend(got[1])
        return True

    def get(self, key: bytes) -> str | None:
        got = self.pending.get(key)
        if got is None:
            got = self.found.get(key)
        if got is None and key not in self.claimed:
            got = self.memo.get(key)
        if got is not None:
            self.hits += 1
        return got

    def put(self, key: bytes, text: str) -> None:
        self.pending.setdefault(key, text)

    def commit(self) -> None:
        """Store this request's perturbations and end its claims (waiters replay them)."""
        pending, claimed = self.pending, self.claimed
        self.pending, self.claimed = {}, []
        mine = set(claimed)
        rest = {k: v for k, v in pending.items() if k not in mine}
        try:
            self.memo.flights.release(pending, claimed)
        finally:
            if rest:
                self.memo.put_many(rest.items())

    def abort(self) -> None:
        """Drop this request's perturbations and claims (a waiter claims next)."""
        claimed, self.pending, self.claimed = self.claimed, {}, []
        self.memo.flights.release({}, claimed)
