"""PostgreSQL connections and schema of the shared proxy state (:mod:`dptext.server.pgstate`, which re-exports them).

A small pool of autocommit connections, each used by one thread for one
transaction at a time, every database error turned into
:class:`~dptext.privacy.flight.StateError` (messages name host:port/dbname,
never the URL's user or password); and :func:`open_pool`, which runs the
schema migrations under an advisory lock (one replica at a time) and refuses
a database whose schema is newer than this dptext.
"""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager

from dptext.errors import DPTextError
from dptext.privacy.flight import StateError

SCHEMA_VERSION = 1
MIGRATIONS = {  # version -> statements taking the schema from version - 1 to it
    1: ["CREATE TABLE dptext_memo (k bytea PRIMARY KEY, text text, owner text NOT NULL, "
        "created double precision NOT NULL)",
        "CREATE INDEX dptext_memo_created ON dptext_memo (created)",
        "CREATE TABLE dptext_spend (key text NOT NULL, ts double precision NOT NULL, eps double precision NOT NULL)",
        "CREATE INDEX dptext_spend_key_ts ON dptext_spend (key, ts)",
        "CREATE TABLE dptext_totals (key text PRIMARY KEY, total double precision NOT NULL)"],
}
MIGRATION_LOCK = 0x647074657874  # advisory lock id: one replica migrates at a time


def is_postgres_url(state: str | None) -> bool:
    return bool(state) and state.startswith(("postgresql://", "postgres://"))


def _where(url: str) -> str:
    """host:port/dbname of a URL, without user or password (for messages)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        d = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - a malformed URL: say so without echoing it
        return "(malformed URL)"
    return f"{d.get('host', 'localhost')}:{d.get('port', 5432)}/{d.get('dbname', '')}"


def _line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class Pool:
    """At most ``size`` connections, each used by one thread for one transaction at a time."""

    def __init__(self, url: str, size: int = 8, connect_timeout: int = 5) -> None:
        self.url, self.connect_timeout = url, connect_timeout
        self.idle: queue.LifoQueue = queue.LifoQueue()
        self.slots = threading.BoundedSemaphore(size)
        self.where = _where(url)

    def _connect(self):
        import psycopg

        return psycopg.connect(self.url, autocommit=True, connect_timeout=self.connect_timeout,
                               options="-c statement_timeout=15000 -c lock_timeout=15000")

    @contextmanager
    def tx(self):
        """A connection inside one transaction (committed on exit); database errors as StateError."""
        import psycopg

        if not self.slots.acquire(timeout=30):
            raise StateError("no free PostgreSQL connection within 30 s")
        conn = None
        try:
            try:
                conn = self.idle.get_nowait()
            except queue.Empty:
                conn = self._connect()
            with conn.transaction():
                yield conn
        except psycopg.Error as exc:
            if conn is not None:
                conn.close()
            raise StateError(f"PostgreSQL state store {self.where}: {_line(exc)}") from None
        finally:
            if conn is not None and not conn.closed and not conn.broken:
                self.idle.put(conn)
            self.slots.release()

    def close(self) -> None:
        while True:
            try:
                self.idle.get_nowait().close()
            except queue.Empty:
                return


def open_pool(url: str) -> Pool:
    """Connect, run the migrations (one replica at a time), check the schema version; DPTextError otherwise."""
    try:
        import psycopg  # noqa: F401
    except ModuleNotFoundError:
        raise DPTextError("config state: a postgresql:// URL needs psycopg (pip install 'dptext[server]')") from None
    pool = Pool(url)
    try:
        with pool.tx() as c:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            c.execute("CREATE TABLE IF NOT EXISTS dptext_schema (version integer NOT NULL)")
            row = c.execute("SELECT max(version) FROM dptext_schema").fetchone()
            have = row[0] or 0
            if have > SCHEMA_VERSION:
                raise DPTextError(f"state database {pool.where} has schema version {have}, this dptext "
                                  f"needs {SCHEMA_VERSION}: upgrade dptext or use another database")
            for v in range(have + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[v]:
                    c.execute(stmt)
            if have != SCHEMA_VERSION:
                c.execute("DELETE FROM dptext_schema")
                c.execute("INSERT INTO dptext_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
    except StateError as exc:
        pool.close()
        raise DPTextError(f"config state: cannot use the PostgreSQL database: {exc}") from None
    return pool
