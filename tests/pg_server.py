"""A real PostgreSQL server for the tests: Debian's binaries, initdb + pg_ctl in a temporary directory.

``postgres`` (session fixture) starts one server on a free loopback port and
stops it at the end; ``pg_url`` (per test) creates a fresh database on it and
yields its URL. PostgreSQL refuses to run as root, so under root the data
directory belongs to the ``postgres`` user and the commands run through
``runuser -u postgres --``. Missing binaries fail the tests with the reason
(``.ci/run`` installs the ``postgresql`` package) unless
``DPTEXT_SKIP_SYSTEM_TESTS=1`` is set, which skips them instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest
from llama_server import free_port


def pg_bindir() -> str | None:
    """The newest ``/usr/lib/postgresql/*/bin`` holding initdb and pg_ctl (or ``$DPTEXT_PG_BIN``)."""
    cands = [os.environ["DPTEXT_PG_BIN"]] if os.environ.get("DPTEXT_PG_BIN") else sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]) if
        p.split("/")[-2].isdigit() else 0, reverse=True)
    for d in cands:
        if os.access(os.path.join(d, "initdb"), os.X_OK) and os.access(os.path.join(d, "pg_ctl"), os.X_OK):
            return d
    return None


class PgServer:
    def __init__(self, bindir: str) -> None:
        self.bindir = bindir
        self.root = tempfile.mkdtemp(prefix="dptext-pg-")
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self.port = free_port()
        self.base = f"postgresql://postgres@127.0.0.1:{self.port}"

    def _run(self, *args: str, timeout: float = 120) -> None:
        cmd = [os.path.join(self.bindir, args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {p.stderr.strip()[-1500:] or p.stdout.strip()[-1500:]}")

    def start(self) -> None:
        data = os.path.join(self.root, "data")
        self._run("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", data, "-o", opts, "-l", os.path.join(self.root, "log"), "-w", "-t", "60",
                  "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", os.path.join(self.root, "data"), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def new_db(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.base + "/postgres", autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return f"{self.base}/{name}"

    def sql(self, url: str, query: str, params=()) -> list[tuple]:
        import psycopg

        with psycopg.connect(url, autocommit=True) as c:
            cur = c.execute(query, params)
            return cur.fetchall() if cur.description else []


@pytest.fixture(scope="session")
def postgres():
    bindir = pg_bindir()
    if bindir is None:
        why = ("PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin: install "
               "Debian's postgresql package (.ci/run does), or set DPTEXT_SKIP_SYSTEM_TESTS=1 to skip these tests")
        if os.environ.get("DPTEXT_SKIP_SYSTEM_TESTS") == "1":
            pytest.skip(why)
        pytest.fail(why)
    server = PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres):
    return postgres.new_db()
