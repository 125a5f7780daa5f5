"""Runs that outlive a Streamlit script run, one active per thread, which any page
attaches to. A message sent meanwhile is queued in the database and sent when a run
completes; after one that did not, the person decides (`send_queued`, `discard`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextlib import suppress

from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import DecisionError, RunInProgress
from gatehouse.graph.protocol.operations import (
    Fork,
    Operation,
    RunOperation,
    RunOptions,
    SendMessage,
)
from gatehouse.graph.service.session import Run, Session
from gatehouse.graph.store.queued import QueuedMessage, QueuedMessages

# How long `next_run` waits for the Runner to have looked at the queue after a run ended.
SETTLE_S = 10.0


class Runner:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._lock = threading.RLock()
        self._runs: dict[str, Run] = {}
        # Set once the run's end has been handled (the queue's next message started).
        self._settled: dict[str, tuple[Run, threading.Event]] = {}
        # Queued messages' run options, by id: each goes out as the person who typed it.
        self._options: dict[str, RunOptions | None] = {}

    @property
    def _queue(self) -> QueuedMessages | None:
        return self.session.storage.queued

    def submit(self, operation: Operation, options: RunOptions | None = None) -> Run:
        """`Session.submit`, a run started in the background (one active run per thread)."""
        if not isinstance(operation, RunOperation):
            return self.session.submit(operation, options)  # a change: no run to keep
        if isinstance(operation, SendMessage) and operation.thread_id is None:
            operation = SendMessage(
                self.session.new_thread_id(), operation.message, operation.owner
            )
        thread_id = operation.thread_id
        assert thread_id is not None
        # A fork rewinds before its run starts: the run begins at the edited message.
        base = operation.message_index if isinstance(operation, Fork) else None
        return self._start(thread_id, lambda: self.session.submit(operation, options), base=base)

    def send(self, thread_id: str, text: str, options: RunOptions | None = None) -> Run | None:
        """A person's message: sent now (its Run), or queued (None) behind a run or other
        messages; behind another process's run, queued and `RunInProgress` raised."""
        queue = self._queue
        if queue is None:
            return self.submit(SendMessage(thread_id, text), options)
        queue.writable()
        with self._lock:
            if self.active(thread_id) is None and not queue.waiting(thread_id):
                try:
                    return self.submit(SendMessage(thread_id, text), options)
                except RunInProgress:  # a run of another process: kept, in view
                    self._options[queue.add(thread_id, text).id] = options
                    raise
            self._options[queue.add(thread_id, text).id] = options
            return None if self.active(thread_id) is not None else self._send_next(thread_id)

    def queued(self, thread_id: str) -> list[QueuedMessage]:
        queue = self._queue
        return queue.waiting(thread_id) if queue is not None else []

    def send_queued(self, thread_id: str, message_id: str) -> Run | None:
        """The person's "Send now"; None when the message is gone."""
        with self._lock:
            if self.active(thread_id) is not None:
                raise RunInProgress("a run is active on this thread: the message is sent after it")
            wanted = [m for m in self.queued(thread_id) if m.id == message_id]
            return self._send(thread_id, wanted[0]) if wanted else None

    def discard(self, thread_id: str, message_id: str) -> bool:
        queue = self._queue
        self._options.pop(message_id, None)
        return queue is not None and queue.take(thread_id, message_id)

    def next_run(self, run: Run) -> Run | None:
        """The run started after `run` on its thread, once the queue was looked at, or None."""
        handled = self._settled.get(run.thread_id)
        if handled is not None and handled[0] is run:
            handled[1].wait(SETTLE_S)
        return self.active(run.thread_id)

    def active(self, thread_id: str) -> Run | None:
        run = self._runs.get(thread_id)
        return run if run is not None and not run.done else None

    def latest(self, thread_id: str) -> Run | None:
        return self._runs.get(thread_id)

    def _start(self, thread_id: str, make: Callable[[], Run], base: int | None = None) -> Run:
        with self._lock:
            if self.active(thread_id) is not None:
                raise RunInProgress(
                    f"a run is already active on thread {thread_id}; wait for it or stop it"
                )
            count = len(self.session.view(thread_id).messages) if base is None else base
            # Validation errors raise here, in the caller, before any background work.
            run = make()
            run.base_messages = count
            self._runs[thread_id] = run
            settled = threading.Event()
            self._settled[thread_id] = (run, settled)
        # After its last event, on the run's thread: the queue's next message.
        return run.start(functools.partial(self._after, run, settled))

    def _after(self, run: Run, settled: threading.Event, event: ev.Event | None) -> None:
        if event is not None:
            return
        if run.status == "completed":
            # A failure leaves the message queued, in view with "Send now".
            with suppress(Exception), self._lock:
                if self.active(run.thread_id) is None:
                    self._send_next(run.thread_id)
        settled.set()

    def _send_next(self, thread_id: str) -> Run | None:
        for message in self.queued(thread_id):
            if (run := self._send(thread_id, message)) is not None:
                return run
        return None

    def _send(self, thread_id: str, message: QueuedMessage) -> Run | None:
        """Start `message`'s run (None: taken elsewhere); put back when it cannot start."""
        queue = self._queue
        assert queue is not None
        if not queue.take(thread_id, message.id):
            return None
        options = self._options.pop(message.id, None)
        try:
            return self.submit(SendMessage(thread_id, message.text), options)
        except (RunInProgress, DecisionError, ValueError):
            queue.add(thread_id, message.text, keep=message)
            self._options[message.id] = options
            raise
