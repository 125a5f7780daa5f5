"""One active run per thread, across processes: a lease row, taken before a run streams,
renewed every third of a short TTL, released at the end; a second run gets
`RunInProgress`. A dead holder's lease is taken over when it expired, or at once when
its process on this host is gone. The owner is `host|pid|nonce|kind` (kind "run" or
"decide": a refusal says what the holder does).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Sequence
from typing import Any

from gatehouse.graph.protocol.errors import RunInProgress
from gatehouse.graph.store.database import Database, Table, among
from gatehouse.graph.store.dialect import upsert
from gatehouse.graph.store.threads import PRIOR, TOUCH_TAKEN, Start

DEFAULT_TTL_S = 9.0
TTL_ENV = "GATEHOUSE_LEASE_TTL"

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at {real} NOT NULL)"""
COLUMNS = ("thread_id", "owner", "expires_at")
KEY = ("thread_id",)
# A free row to lock, unless the thread has one: (thread_id, '', 0).
PLACEHOLDER = upsert("gatehouse_leases", COLUMNS, KEY)
# (thread_id, owner, expires_at, now): taken when no one holds it (owner '': released).
TAKE_FREE = upsert(
    "gatehouse_leases",
    COLUMNS,
    KEY,
    update=COLUMNS[1:],
    where="gatehouse_leases.owner = '' OR gatehouse_leases.expires_at <= ?",
)


# TAKE_FREE and a run's start in one statement (Postgres). A row when taken: whether the
# start was written, and the thread's row before it (NULLs when it had none). Written
# only when the lease was free (released or new) in the statement's snapshot: a take
# that waited for a holder's release (and its end status) would read `prior` from before
# it. Its parameters: PRIOR's, TAKE_FREE's, the thread's, TOUCH_TAKEN's.
TAKE_STARTING = (
    f"WITH prior AS ({PRIOR}), took AS ({TAKE_FREE} RETURNING thread_id), "
    "starting AS (SELECT thread_id FROM took WHERE NOT EXISTS (SELECT 1 FROM gatehouse_leases "
    "WHERE thread_id = ? AND owner <> '')), "
    f"started AS ({TOUCH_TAKEN}) "
    "SELECT EXISTS (SELECT 1 FROM starting), prior.* FROM took LEFT JOIN prior ON true"
)


# (thread_id, owner): the row stays, marked free, for an update in place by the next run
# (Postgres's HOT update), not a delete and insert churning the table (issue 58).
RELEASE = "UPDATE gatehouse_leases SET owner='', expires_at=0 WHERE thread_id=? AND owner=?"
# A statement and its parameters.
Statement = tuple[str, Sequence[Any]]


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


def kind_of_holder(refused: RunInProgress) -> str:
    return str(getattr(refused, "holder_kind", "run"))


def holder_kind(owner: str) -> str:
    return owner.split("|")[3] if owner.count("|") >= 3 else "run"


class Lease:
    """A held lease, renewed in the background while a run streams."""

    def __init__(
        self, leases: Leases, thread_id: str, owner: str, undo: Statement | None = None
    ) -> None:
        self.leases = leases
        self.thread_id = thread_id
        self.owner = owner
        self.lost = False
        # What puts back the run's start written with the take (`Leases.acquire`).
        self.undo = undo
        # With it: whether the thread index showed a pause pending as the lease was taken
        # (None: not read).
        self.index_paused: bool | None = None

    def start_renewing(self) -> None:
        self.leases.renewals.add(self)

    def release(self, then: Statement | None = None) -> None:
        """Free the thread; `then` (the status the run ended with) in the same transaction."""
        self.leases.renewals.remove(self)
        self.leases.release(self, then)


class Renewals:
    """One background thread per lease table renews every held lease each ttl/3. It holds
    the table only weakly between ticks: a session never closed is still garbage, and
    the thread ends at its next tick."""

    def __init__(self, leases: Leases) -> None:
        self._leases = leases
        self._held: dict[int, Lease] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, lease: Lease | None = None) -> None:
        """Renew `lease` (None: only make sure the ticks run, for a release to retry)."""
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
    while not closed.wait(interval_s):
        renewals = renewals_ref()
        if renewals is None:
            return
        renewals.renew_held()
        del renewals  # not held while waiting: see Renewals


class Leases(Table):
    """`gatehouse_leases`: one run per thread across every process sharing the database
    (a holder on another host is only taken over when its lease expired)."""

    name, schema = "gatehouse_leases", SCHEMA

    def __init__(self, db: Database, *, ttl: float | None = None) -> None:
        super().__init__(db)
        # Errors a renewal shrugs off until its next tick (busy, full disk, failover).
        self.transient_errors = db.errors
        if ttl is None:
            try:
                ttl = float(os.environ.get(TTL_ENV, "") or DEFAULT_TTL_S)
            except ValueError:
                ttl = DEFAULT_TTL_S
        self.ttl = ttl
        self.renewals = Renewals(self)
        self._host = socket.gethostname()
        # Released leases the database refused (owner -> thread, what goes with the
        # release), retried each tick.
        self._abandoned: dict[str, tuple[str, Statement | None]] = {}

    def acquire(
        self, thread_id: str, *, what: str = "a run", kind: str = "run", start: Start | None = None
    ) -> Lease:
        """Take the thread's lease or raise `RunInProgress` (see `kind_of_holder`); with
        `start`, written with the take (see `Lease.undo`)."""
        owner = f"{self._host}|{os.getpid()}|{uuid.uuid4().hex}|{kind}"
        now = time.time()
        take = (thread_id, owner, now + self.ttl, now)
        # The usual case in one statement: no row, or a released or expired one.
        if start is None:
            if self._db.run(TAKE_FREE, take) == 1:
                return Lease(self, thread_id, owner)
        elif self.dialect.postgres:
            rows = self._db.rows(TAKE_STARTING, (thread_id, *take, thread_id, *start.touch()[1]))
            if rows:
                started, *prior = rows[0]
                if not started:  # the caller writes it (see TAKE_STARTING)
                    return Lease(self, thread_id, owner)
                return self._started(
                    thread_id, owner, start, prior if prior[0] is not None else None
                )
        with self._db.transaction() as cur:
            # A placeholder first, so that racing processes queue on its row lock.
            cur.execute(PLACEHOLDER, (thread_id, "", 0))
            row = cur.execute(
                f"SELECT owner, expires_at FROM gatehouse_leases WHERE thread_id=?{self.dialect.for_update}",
                (thread_id,),
            ).fetchone()
            if row is not None and not self._free(row[0], row[1], now):
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
            if start is None:
                return Lease(self, thread_id, owner)
            prior = cur.execute(PRIOR, (thread_id,)).fetchone()
            cur.execute(*start.touch())
        return self._started(thread_id, owner, start, prior)

    def _started(
        self, thread_id: str, owner: str, start: Start, prior: Sequence[Any] | None
    ) -> Lease:
        lease = Lease(self, thread_id, owner, start.undo(prior))
        lease.index_paused = prior is not None and prior[4] is not None
        return lease

    def renew(self, lease: Lease) -> bool:
        renew = "UPDATE gatehouse_leases SET expires_at=? WHERE thread_id=? AND owner=?"
        return self._db.run(renew, (time.time() + self.ttl, lease.thread_id, lease.owner)) == 1

    def release(self, lease: Lease, then: Statement | None = None) -> None:
        try:
            self._release(lease.thread_id, lease.owner, then)
        except self.transient_errors:
            self._abandoned[lease.owner] = (lease.thread_id, then)
            self.renewals.add()  # the ticks try again

    def _release(self, thread_id: str, owner: str, then: Statement | None) -> None:
        if then is None:
            self._db.run(RELEASE, (thread_id, owner))
            return
        with self._db.transaction() as cur:
            # Not when another run took the thread over: the status is its own now.
            if cur.execute(RELEASE, (thread_id, owner)).rowcount == 1:
                cur.execute(*then)

    def retry_releases(self) -> None:
        for owner, (thread_id, then) in list(self._abandoned.items()):
            try:
                self._release(thread_id, owner, then)
            except self.transient_errors:
                return  # still unreachable: next tick
            self._abandoned.pop(owner, None)

    def held(self, thread_ids: list[str]) -> set[str]:
        """Which of these threads a live run holds now."""
        if not thread_ids:
            return set()
        now = time.time()
        return {
            tid
            for tid, owner, expires in self._db.rows(
                f"SELECT thread_id, owner, expires_at FROM gatehouse_leases WHERE {among('thread_id', thread_ids)}",
                tuple(thread_ids),
            )
            if not self._free(owner, expires, now)
        }

    def holder(self, thread_id: str) -> str | None:
        rows = self._db.rows(
            "SELECT owner, expires_at FROM gatehouse_leases WHERE thread_id=?", (thread_id,)
        )
        if not rows or self._free(rows[0][0], rows[0][1], time.time()):
            return None
        return str(rows[0][0])

    def _free(self, owner: str, expires_at: float, now: float) -> bool:
        """The lease rule (the thread reader's too): free when released (here, if the
        database refused it), expired, or held by a dead process on this host."""
        if not owner or expires_at <= now or owner in self._abandoned:
            return True
        host, _, rest = owner.partition("|")
        pid = rest.partition("|")[0]
        return host == self._host and pid.isdigit() and not _pid_alive(int(pid))

    def _describe(self, owner: str) -> str:
        host, _, rest = owner.partition("|")
        pid = rest.partition("|")[0]
        here = host == self._host and pid == str(os.getpid())
        return "in this process" if here else f"process {pid} on {host}"

    def close(self) -> None:
        self.renewals.close()
        super().close()
