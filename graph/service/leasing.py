"""The thread's run lease (graph/store/leases.py) as a Session takes it: one run or
one change of a thread at a time, across processes."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from gatehouse.graph.protocol.errors import (
    AlreadyDecided,
    GatehouseError,
    RunInProgress,
    StorageError,
)
from gatehouse.graph.protocol.threads import ThreadInfo, check_thread_id
from gatehouse.graph.service.errors import describe_error, is_storage_error, storage_message
from gatehouse.graph.store.leases import Lease, kind_of_holder
from gatehouse.graph.store.storage import Storage
from gatehouse.graph.store.threads import Start

# How long a decision waits for another holder: the run that asked, ending, or a change.
DECIDE_WAIT_S = 5.0


@dataclasses.dataclass
class ThreadLeases:
    storage: Storage
    retry: Callable[[str], Any]  # starts a retry run of a thread (Session's `Retry`)

    def inbox(self, infos: list[ThreadInfo]) -> list[ThreadInfo]:
        """The inbox without pauses a live run is deciding; a run a crash cut off in an
        approved call is first continued to its "outcome unknown" question."""
        leases, journal = self.storage.leases, self.storage.journal
        if leases is None:
            return infos
        running = [i.thread_id for i in self.storage.index.running()]
        alive = leases.held(running)
        crashed = [t for t in running if t not in alive]
        cut_off = journal.unfinished(crashed) if journal is not None and crashed else set()
        for thread_id in cut_off:
            # Refused when another process got there first; a failure stays for `retry`.
            with suppress(GatehouseError):
                self.retry(thread_id).collect()
        if cut_off:
            infos = self.storage.index.pending()
            alive = leases.held([i.thread_id for i in infos if i.status == "running"])
        return [
            dataclasses.replace(i, status="interrupted") if i.status == "running" else i
            for i in infos
            if i.thread_id not in alive
        ]

    def acquire(
        self, thread_id: str, *, deciding: bool = False, start: Start | None = None
    ) -> Lease | None:
        """The thread's run lease; a decision waits a moment for a run that is ending;
        `start`: the run's start, written with the take (undone if it does not start)."""
        check_thread_id(thread_id)
        leases = self.storage.leases
        if leases is None:
            return None
        what = "a decision on this approval request" if deciding else "a run"
        deadline = time.monotonic() + DECIDE_WAIT_S
        try:
            while True:
                try:
                    return leases.acquire(
                        thread_id, what=what, kind="decide" if deciding else "run", start=start
                    )
                except RunInProgress as exc:
                    if not deciding:
                        raise
                    if kind_of_holder(exc) == "decide":
                        raise AlreadyDecided(f"{exc} (already decided)") from None
                    if time.monotonic() > deadline:
                        raise RunInProgress(
                            f"a run is still going on thread {thread_id}; nothing was "
                            "decided, try again when it ends"
                        ) from None
                    time.sleep(0.02)
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            message = storage_message(exc, describe_error(exc)[0], self.storage.location)
            raise StorageError(f"cannot start a run on thread {thread_id}: {message}") from exc

    @contextmanager
    def leased(
        self,
        thread_id: str,
        *,
        deciding: bool = False,
        run: bool = True,
        start: Start | None = None,
    ) -> Iterator[Lease | None]:
        """A run's lease (released here only if starting fails, its `start` undone), or a
        change's (`run=False`)."""
        lease = self.acquire(thread_id, deciding=deciding, start=start)
        started = False
        try:
            yield lease
            started = run
        finally:
            if lease is not None and not started:
                lease.release(lease.undo)
