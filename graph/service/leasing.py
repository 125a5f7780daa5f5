"""The thread's run lease as the Session takes it (graph/store/leases.py holds the
lease itself): one run or one change of a thread at a time, across processes.

`ThreadLeases` is a part of `Session` (graph/service/session.py): runs take the lease
with `_leased` (the run releases it when it ends), changes made here and now (undo,
compact, import) with `_holding`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from graph.protocol.errors import AlreadyDecided, RunInProgress, StorageError
from graph.protocol.threads import check_thread_id
from graph.service.errors import describe_error, is_storage_error, storage_message
from graph.store.leases import Lease
from graph.store.storage import Storage

__all__ = ["ThreadLeases"]


class ThreadLeases:
    storage: Storage

    def _acquire(self, thread_id: str, *, deciding: bool = False) -> Lease | None:
        """The thread's run lease (graph/store/leases.py). When `deciding`, a thread
        that is busy means the decision came too late (a double click, another tab or
        process): `AlreadyDecided`."""
        check_thread_id(thread_id)
        leases = self.storage.leases
        if leases is None:
            return None
        what = "a decision on this approval request" if deciding else "a run"
        try:
            return leases.acquire(thread_id, what=what)
        except RunInProgress as exc:
            if deciding:
                raise AlreadyDecided(f"{exc} (already decided / already running)") from None
            raise
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            message = storage_message(exc, describe_error(exc)[0], self.storage.location)
            raise StorageError(f"cannot start a run on thread {thread_id}: {message}") from exc

    @contextmanager
    def _leased(self, thread_id: str, *, deciding: bool = False) -> Iterator[Lease | None]:
        """The lease for a run about to start: released again if starting fails (the
        run releases it when it ends)."""
        lease = self._acquire(thread_id, deciding=deciding)
        try:
            yield lease
        except BaseException:
            if lease is not None:
                lease.release()
            raise

    @contextmanager
    def _holding(self, thread_id: str) -> Iterator[None]:
        """The lease for a change made here and now (undo, compact, import): no run
        may be going on the thread meanwhile."""
        lease = self._acquire(thread_id)
        try:
            yield
        finally:
            if lease is not None:
                lease.release()
