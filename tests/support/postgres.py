"""A real, throwaway Postgres server for the tests: initdb + pg_ctl in a temp folder.

Postgres refuses to run as root, so under root the data folder belongs to the
`postgres` user (or `nobody`) and the server is started through `runuser`. It
listens on 127.0.0.1 on a free port with trust auth and a unix socket in the same
temp folder, and is stopped (and the folder removed) at the end of the session.

When the binaries are missing the tests skip with the reason, except under CI
(env `CI` set), where they fail: `.ci/run` installs Debian's `postgresql`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.markers import require_marker

SEARCH = [
    "/usr/lib/postgresql/*/bin",
    "/usr/local/pgsql/bin",
    "/opt/homebrew/bin",
    "/usr/local/bin",
    "/usr/bin",
]


def find_bin_dir() -> Path | None:
    env = os.environ.get("GATEHOUSE_PG_BIN")
    candidates = [env] if env else []
    for pattern in SEARCH:
        candidates += sorted(glob.glob(pattern), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> str | None:
    """Who runs the server: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


@dataclass
class PostgresServer:
    bin_dir: Path
    root: Path
    port: int
    user: str | None
    # False: fsync and synchronous commit off (fast tests); True: Postgres's defaults
    # (what a deployment runs; the load bench).
    durable: bool = False

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = list(cmd)
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=self.root)

    def start(self) -> None:
        data, sock = self.root / "data", self.root / "sock"
        sock.mkdir()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chmod(self.root, 0o755)
            for p in (self.root, sock):
                os.chown(p, entry.pw_uid, entry.pw_gid)
        init = self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        self._pg_start()

    def _pg_start(self) -> None:
        data, sock = self.root / "data", self.root / "sock"
        opts = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={sock} "
            "-c max_connections=300"
        )
        if not self.durable:
            opts += (
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                " -c wal_level=minimal -c max_wal_senders=0"
            )
        started = self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            opts,
            "-w",
            "-t",
            "60",
            "start",
        )
        if started.returncode != 0:
            log = (
                (self.root / "server.log").read_text()
                if (self.root / "server.log").exists()
                else ""
            )
            raise RuntimeError(f"pg_ctl start failed:\n{started.stdout}\n{started.stderr}\n{log}")

    def stop(self) -> None:
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.root / "data"),
            "-m",
            "immediate",
            "-w",
            "stop",
        )

    def restart(self) -> None:
        """A crash and a start (`-m immediate`: what a failover or an OOM kill does)."""
        self.stop()
        self._pg_start()

    def create_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            # FILE_COPY (PG 15+): a plain copy of the small template, not a WAL-logged one.
            strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
            conn.execute(f'CREATE DATABASE "{name}"{strategy}')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a test database, disconnecting whoever still uses it (PG 13+)."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            force = " WITH (FORCE)" if conn.info.server_version >= 130000 else ""
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"{force}')


@contextmanager
def running_server(*, durable: bool = False) -> Iterator[PostgresServer]:
    """A throwaway server of one's own (a test that restarts it, the load bench);
    RuntimeError when the binaries are missing."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(
            "Postgres binaries (initdb, pg_ctl) not found; install Debian's `postgresql` "
            "or set GATEHOUSE_PG_BIN"
        )
    root = Path(tempfile.mkdtemp(prefix="gatehouse-pg-"))
    server = PostgresServer(bin_dir, root, free_port(), _server_user(), durable)
    started = time.monotonic()
    try:
        server.start()
    except Exception:
        shutil.rmtree(root, ignore_errors=True)
        raise
    server.startup_s = time.monotonic() - started  # type: ignore[attr-defined]
    watchdog = _watchdog(server)
    try:
        yield server
    finally:
        watchdog.kill()
        watchdog.wait()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    if find_bin_dir() is None:
        reason = (
            "Postgres binaries (initdb, pg_ctl) not found; install Debian's `postgresql` "
            "or set GATEHOUSE_PG_BIN"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with running_server() as server:
        yield server


WATCHDOG = """
import os, shutil, subprocess, sys, time
parent, argv, root = int(sys.argv[1]), sys.argv[2:-1], sys.argv[-1]
while True:
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        break
    time.sleep(1)
subprocess.run(argv, capture_output=True, timeout=60)
shutil.rmtree(root, ignore_errors=True)
"""


def _watchdog(server: PostgresServer) -> subprocess.Popen[bytes]:
    """Stops the server if this test process dies without tearing down (kill -9, a
    CI timeout), so no Postgres is left running. Killed on a normal teardown."""
    stop = [
        str(server.bin_dir / "pg_ctl"),
        "-D",
        str(server.root / "data"),
        "-m",
        "immediate",
        "-w",
        "stop",
    ]
    if server.user is not None:
        stop = ["runuser", "-u", server.user, "--", *stop]
    return subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, str(os.getpid()), *stop, str(server.root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A URL of a new database of its own for each test (dropped afterwards)."""
    require_marker("postgres", "uses a Postgres database")
    url = postgres_server.create_database()
    yield url
    postgres_server.drop_database(url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def either_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The test once on a SQLite file and once on a Postgres database of its own."""
    if request.param == "sqlite":
        return str(tmp_path / "gatehouse.sqlite")
    return str(request.getfixturevalue("postgres_url"))
