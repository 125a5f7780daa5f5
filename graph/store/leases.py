"""One active run per thread, across processes: a lease row in the database.

A run takes the thread's lease before it streams (one upsert, or a transaction that
locks the row), renews it while it runs and releases it at the end; a second run is
refused with `RunInProgress`. A dead holder's lease is taken over when it expired (a
short TTL, renewed every third of it), or at once when the holder was a process on
this host that no longer exists. A release the database refused is retried on every
renewal tick. The owner is `host|pid|nonce|kind`, kind "run" or "decide", so a
refusal can say what the holder is doing.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
import weakref

from graph.protocol.errors import RunInProgress
from graph.store.database import Cursor, Database, Table
from graph.store.dialect import upsert

DEFAULT_TTL_S = 9.0
TTL_ENV = "GATEHOUSE_LEASE_TTL"

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at {real} NOT NULL)"""
COLUMNS = ("thread_id", "owner", "expires_at")
KEY = ("thread_id",)
# A row to lock: (thread_id, '', 0), a free lease, unless the thread has a row.
PLACEHOLDER = upsert("gatehouse_leases", COLUMNS, KEY)
# (thread_id, owner, expires_at, now): taken when no one holds it (owner '': released).
TAKE_FREE = upsert(
    "gatehouse_leases",
    COLUMNS,
    KEY,
    update=COLUMNS[1:],
    where="gatehouse_leases.owner = '' OR gatehouse_leases.expires_at <= ?",
)


# (thread_id, owner): the row stays, marked free: the next run on the thread takes it
# with an update in place (no index entry made or removed; Postgres's HOT update)
# where a delete and an insert would churn the table and its key (issue 58).
RELEASE = "UPDATE gatehouse_leases SET owner='', expires_at=0 WHERE thread_id=? AND owner=?"


def _ttl_default() -> float:
    try:
        return float(os.environ.get(TTL_ENV, "") or DEFAULT_TTL_S)
    except ValueError:
        return DEFAULT_TTL_S


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (killed, not yet reaped by its parent) holds nothing either.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def lease_free(owner: str, expires_at: float, now: float, host: str) -> bool:
    """The lease rule, for every reader of `gatehouse_leases` (the thread reader too):
    free when released (no owner), expired, or held by a dead process on `host` (this one)."""
    if not owner or expires_at <= now:
        return True
    holder_host, _, rest = owner.partition("|")
    pid = rest.partition("|")[0]
    return holder_host == host and pid.isdigit() and not _pid_alive(int(pid))


def kind_of_holder(refused: RunInProgress) -> str:
    """What the holder of a refused lease does: "decide" or "run"."""
    return str(getattr(refused, "holder_kind", "run"))


def holder_kind(owner: str) -> str:
    """What a lease's holder does: "decide" (applying a decision) or "run"."""
    return owner.split("|")[3] if owner.count("|") >= 3 else "run"


class Lease:
    """A held lease; renewed in the background (by its `Leases`) while a run streams."""

    def __init__(self, leases: Leases, thread_id: str, owner: str) -> None:
        self.leases = leases
        self.thread_id = thread_id
        self.owner = owner
        self.lost = False

    def start_renewing(self) -> None:
        self.leases.keep_renewed(self)

    def release(self) -> None:
        self.leases.stop_renewing(self)
        self.leases.release(self)


class Renewals:
    """One background thread per lease table renews every held lease each ttl/3: a
    thread per run would cost a thread start on every run.

    The thread holds its table only weakly between ticks: a session its user never
    closed is still garbage (with its database connection), and the thread ends at
    its next tick instead of keeping both alive for the life of the process."""

    def __init__(self, leases: Leases) -> None:
        self._leases = leases
        self._held: dict[int, Lease] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, lease: Lease | None = None) -> None:
        """Renew `lease` from now on (None: only make sure the ticks run, for a release
        to try again)."""
        with self._lock:
            if lease is not None:
                self._held[id(lease)] = lease
            if self._thread is None:
                self._thread = threading.Thread(
                    target=_renew_until_gone,
                    args=(weakref.ref(self), self._closed, self._leases.ttl / 3),
                    name="gatehouse-leases",
                    daemon=True,
                )
                self._thread.start()

    def remove(self, lease: Lease) -> None:
        with self._lock:
            self._held.pop(id(lease), None)

    def renew_held(self) -> None:
        self._leases.retry_releases()
        with self._lock:
            held = list(self._held.values())
        for lease in held:
            try:
                if not self._leases.renew(lease):
                    lease.lost = True
                    self.remove(lease)
            except self._leases.transient_errors:
                continue  # busy, full disk, failover: try again next tick; the TTL gives slack

    def close(self) -> None:
        self._closed.set()


def _renew_until_gone(
    renewals_ref: weakref.ref[Renewals], closed: threading.Event, interval_s: float
) -> None:
    """The renewal thread: a tick every interval until the table is closed or collected."""
    while not closed.wait(interval_s):
        renewals = renewals_ref()
        if renewals is None:
            return
        renewals.renew_held()
        del renewals  # not held while waiting: see Renewals


class Leases(Table):
    """`gatehouse_leases(thread_id PK, owner, expires_at)`: one run per thread across
    every process on every machine sharing the database. A holder on another host is
    only taken over when its lease expired (its pid means nothing here)."""

    def __init__(self, db: Database, *, ttl: float | None = None) -> None:
        super().__init__(db)
        # Errors a renewal shrugs off until its next tick (busy, full disk, failover, full pool).
        self.transient_errors = db.errors
        self.ttl = ttl if ttl is not None else _ttl_default()
        self._renewals = Renewals(self)
        self._host = socket.gethostname()
        # Leases this process let go of but could not delete (the disk was full, the
        # database restarting): owner -> thread id, deleted again on each renewal tick.
        self._abandoned: dict[str, str] = {}

    @staticmethod
    def create(cur: Cursor) -> None:
        cur.execute(cur.dialect.ddl(SCHEMA))

    def acquire(self, thread_id: str, *, what: str = "a run", kind: str = "run") -> Lease:
        """Take the thread's lease or raise `RunInProgress` (`kind_of_holder` says
        what the holder does, "run" or "decide")."""
        owner = f"{self._host}|{os.getpid()}|{uuid.uuid4().hex}|{kind}"
        now = time.time()
        # The usual case in one statement: nobody holds the thread (no row, or a released
        # or expired one). A live-looking holder takes the path below.
        if self._db.run(TAKE_FREE, (thread_id, owner, now + self.ttl, now)) == 1:
            return Lease(self, thread_id, owner)
        with self._db.transaction() as cur:
            # A free placeholder row first, so the row lock has a row to lock even for a
            # thread that never had a lease: two processes racing queue up here.
            cur.execute(PLACEHOLDER, (thread_id, "", 0))
            row = cur.execute(
                f"SELECT owner, expires_at FROM gatehouse_leases WHERE thread_id=?{self.dialect.for_update}",
                (thread_id,),
            ).fetchone()
            if row is not None and row[0] and not self._free(row[0], row[1], now):
                refused = RunInProgress(
                    f"{what} is already running on thread {thread_id} "
                    f"({self._describe(row[0])}); wait for it to finish or stop it"
                )
                # Read by `kind_of_holder` (a plain RunInProgress: clients name the class).
                setattr(refused, "holder_kind", holder_kind(row[0]))  # noqa: B010
                raise refused
            cur.execute(
                "UPDATE gatehouse_leases SET owner=?, expires_at=? WHERE thread_id=?",
                (owner, now + self.ttl, thread_id),
            )
        return Lease(self, thread_id, owner)

    def keep_renewed(self, lease: Lease) -> None:
        self._renewals.add(lease)

    def stop_renewing(self, lease: Lease) -> None:
        self._renewals.remove(lease)

    def renew(self, lease: Lease) -> bool:
        return (
            self._db.run(
                "UPDATE gatehouse_leases SET expires_at=? WHERE thread_id=? AND owner=?",
                (time.time() + self.ttl, lease.thread_id, lease.owner),
            )
            == 1
        )

    def release(self, lease: Lease) -> None:
        try:
            self._db.run(
                RELEASE,
                (lease.thread_id, lease.owner),
            )
        except self.transient_errors:
            self._abandoned[lease.owner] = lease.thread_id
            self._renewals.add()  # the ticks try again

    def retry_releases(self) -> None:
        """Delete the leases a failed release left behind (each renewal tick)."""
        for owner, thread_id in list(self._abandoned.items()):
            try:
                self._db.run(
                    RELEASE,
                    (thread_id, owner),
                )
            except self.transient_errors:
                return  # still unreachable: next tick
            self._abandoned.pop(owner, None)

    def held(self, thread_ids: list[str]) -> set[str]:
        """Which of these threads a live run holds now (one query)."""
        if not thread_ids:
            return set()
        marks = ",".join("?" * len(thread_ids))
        now = time.time()
        return {
            tid
            for tid, owner, expires in self._db.rows(
                f"SELECT thread_id, owner, expires_at FROM gatehouse_leases WHERE thread_id IN ({marks})",
                tuple(thread_ids),
            )
            if owner and not self._free(owner, expires, now)
        }

    def holder(self, thread_id: str) -> str | None:
        rows = self._db.rows(
            "SELECT owner, expires_at FROM gatehouse_leases WHERE thread_id=?", (thread_id,)
        )
        if not rows or not rows[0][0] or self._free(rows[0][0], rows[0][1], time.time()):
            return None
        return str(rows[0][0])

    def _free(self, owner: str, expires_at: float, now: float) -> bool:
        return owner in self._abandoned or lease_free(owner, expires_at, now, self._host)

    def _describe(self, owner: str) -> str:
        host, _, rest = owner.partition("|")
        pid = rest.partition("|")[0]
        return (
            "in this process"
            if host == self._host and pid == str(os.getpid())
            else f"process {pid} on {host}"
        )

    def close(self) -> None:
        self._renewals.close()
        super().close()
