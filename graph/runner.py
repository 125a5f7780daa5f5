"""Runs that live outside a UI script run.

Streamlit re-executes its script on every click, so a run iterated inside the script
would die with it. The `Runner` belongs to the server process: each run goes on a
background thread, its events are buffered, and any page (after a click, a refresh,
a new tab) attaches to the live run and reads the buffer from any position.
One active run per thread; a second start while one runs is refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from graph import events as ev
from graph.lease import RunInProgress
from graph.session import Run, Session

__all__ = ["RunHandle", "RunInProgress", "Runner"]


class RunHandle:
    """A run on a background thread, with its buffered events."""

    def __init__(self, thread_id: str, kind: str) -> None:
        self.thread_id = thread_id
        self.kind = kind
        self.events: list[ev.Event] = []
        self.status: str | None = None
        self.started_at = time.time()
        self._run: Run | None = None
        self._changed = threading.Condition()
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        if self._run is not None:
            self._run.cancel()

    def wait(self, cursor: int, timeout: float = 0.5) -> list[ev.Event]:
        """Events after position `cursor`, waiting up to `timeout` for new ones."""
        with self._changed:
            if len(self.events) <= cursor and not self.done:
                self._changed.wait(timeout)
            return self.events[cursor:]

    def join(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ev.TextDelta))

    def _push(self, event: ev.Event) -> None:
        with self._changed:
            self.events.append(event)
            if isinstance(event, ev.RunFinished):
                self.status = event.status
            self._changed.notify_all()

    def _finish(self) -> None:
        with self._changed:
            self._done.set()
            self._changed.notify_all()


class Runner:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._runs: dict[str, RunHandle] = {}

    def send(self, thread_id: str | None, text: str) -> RunHandle:
        thread_id = thread_id or self.session.new_thread_id()
        return self._start(thread_id, "message", lambda: self.session.send(thread_id, text))

    def resume(self, thread_id: str, answer: Any) -> RunHandle:
        return self._start(thread_id, "resume", lambda: self.session.resume(thread_id, answer))

    def fork(self, thread_id: str, message_index: int, text: str) -> RunHandle:
        return self._start(thread_id, "message", lambda: self.session.fork(thread_id, message_index, text))

    def retry(self, thread_id: str) -> RunHandle:
        return self._start(thread_id, "retry", lambda: self.session.retry(thread_id))

    def active(self, thread_id: str) -> RunHandle | None:
        handle = self._runs.get(thread_id)
        return handle if handle is not None and not handle.done else None

    def latest(self, thread_id: str) -> RunHandle | None:
        """The live run, or the last one that ran in this process."""
        return self._runs.get(thread_id)

    def cancel(self, thread_id: str) -> bool:
        handle = self.active(thread_id)
        if handle is None:
            return False
        handle.cancel()
        return True

    def _start(self, thread_id: str, kind: str, make: Callable[[], Run]) -> RunHandle:
        with self._lock:
            if self.active(thread_id) is not None:
                raise RunInProgress(
                    f"a run is already active on thread {thread_id}; wait for it or stop it"
                )
            handle = RunHandle(thread_id, kind)
            # Validation errors (a bad decision, a pending approval) raise here, in
            # the caller, before any background work starts.
            handle._run = make()
            self._runs[thread_id] = handle
        threading.Thread(target=self._drive, args=(handle,), name=f"gatehouse-run-{thread_id[:8]}", daemon=True).start()
        return handle

    @staticmethod
    def _drive(handle: RunHandle) -> None:
        assert handle._run is not None
        try:
            for event in handle._run:
                handle._push(event)
        except Exception as exc:  # the session reports errors as events; this is a last guard
            handle._push(ev.ErrorEvent(thread_id=handle.thread_id, message=f"{type(exc).__name__}: {exc}"))
            handle._push(ev.RunFinished(thread_id=handle.thread_id, status="failed", reason=str(exc)))
        finally:
            handle._finish()
