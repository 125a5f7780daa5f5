"""The crash-safety and concurrency suites (kill -9 at the moments that matter,
racing processes, run leases, 400 runs at once) against a real Postgres server (issue 9).

The tests of tests/test_crash_recovery.py are imported and collected here with the
`files` fixture handing out a fresh Postgres database URL instead of a SQLite path;
the victim processes (tests/support/crash_worker.py) open the same URL. The one
SQLite-specific test (leases poked with raw SQL) has its Postgres twin below.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

import tests.test_crash_recovery as crash
from gatehouse.graph import RunInProgress
from gatehouse.graph.store import open_storage
from gatehouse.graph.store.dialect import POSTGRES
from tests.test_concurrency import run_busy_workload

# The crash-safety suite, collected again in this module (on Postgres).
from tests.test_crash_recovery import *  # noqa: F403

pytestmark = pytest.mark.postgres

TURNS = 10


def _intact(db: object) -> None:
    """After a kill -9: the server is up, and the victim left no transaction open."""
    with psycopg.connect(str(db), autocommit=True) as conn:
        stuck = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
        ).fetchone()
        assert stuck == (0,)


@pytest.fixture(autouse=True)
def _on_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crash, "assert_intact", _intact)


@pytest.fixture
def files(postgres_url: str, tmp_path: Path) -> tuple[str, Path, Path]:
    return postgres_url, tmp_path / "counter.txt", tmp_path / "marker.txt"


def test_lease_expiry_and_dead_holders(postgres_url: str) -> None:
    first, second = open_storage(postgres_url), open_storage(postgres_url)
    leases, other = first.leases, second.leases
    assert leases is not None and other is not None and leases.dialect is POSTGRES is other.dialect
    leases.ttl = other.ttl = 0.3

    def put_row(thread_id: str, owner: str, expires_at: float) -> None:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO gatehouse_leases VALUES (%s, %s, %s) ON CONFLICT (thread_id) "
                "DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at",
                (thread_id, owner, expires_at),
            )

    try:
        crash.exercise_lease_expiry(leases, other, put_row)
    finally:
        first.close()
        second.close()


def test_racing_acquire_on_a_new_thread_gives_one_lease(postgres_url: str) -> None:
    """Many connections race for a thread that never had a lease row: exactly one wins."""
    import threading

    storages = [open_storage(postgres_url) for _ in range(6)]
    barrier = threading.Barrier(len(storages))
    won: list[object] = []
    lost: list[Exception] = []

    def race(storage: object) -> None:
        barrier.wait()
        try:
            won.append(storage.leases.acquire("fresh"))  # type: ignore[attr-defined]
        except RunInProgress as exc:
            lost.append(exc)

    workers = [threading.Thread(target=race, args=(s,)) for s in storages]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert len(won) == 1 and len(lost) == len(storages) - 1
    finally:
        for s in storages:
            s.close()


def test_twenty_threads_ten_turns_two_processes_and_four_threads(
    postgres_url: str, tmp_path: Path
) -> None:
    """tests/test_concurrency.py on Postgres: 400 runs from 4 threads of this process
    and 2 other processes, nothing lost."""
    run_busy_workload(postgres_url, tmp_path / "counter.txt", timeout_s=300)
