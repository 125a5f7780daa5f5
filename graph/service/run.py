"""One run: the `Run` a front end iterates, and `drive`, the pump that turns it into
events. Only `updates` are streamed, events come from a sink in the run's context:
with `custom` or `messages` LangGraph builds a thread pool per run (BENCHMARKS.md).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import KW_ONLY, dataclass, field
from queue import SimpleQueue
from typing import Any, cast

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.history import text_of
from gatehouse.graph.agent.state import STOP_KEYS
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.state_keys import STOP_KIND, STOP_REASON, stop_status
from gatehouse.graph.protocol.threads import NOTICE_MARK
from gatehouse.graph.service.errors import describe_error, storage_message
from gatehouse.graph.service.live_reads import EventGate
from gatehouse.graph.service.reads import ThreadReads, thread_config
from gatehouse.graph.service.workers import run_in_worker
from gatehouse.graph.store.langgraph_private import INTERRUPT
from gatehouse.graph.store.leases import Lease
from gatehouse.graph.store.threads import touching


@dataclass(eq=False)
class Run:
    """One run's events: iterated here, or `start()`ed on a thread that buffers them."""

    thread_id: str
    _events: Iterator[ev.Event]
    _cancel: threading.Event = field(default_factory=threading.Event)
    _: KW_ONLY
    kind: str = "message"
    # The message that started it (not yet in the thread's history at start).
    user_text: str | None = None
    # Messages the thread had before the run: where a page draws the live run.
    base_messages: int | None = field(default=None, init=False)
    status: ev.RunStatus | None = field(default=None, init=False)
    # The run's last event: its status, and its final reply (`text`, `message_id`).
    finished: ev.RunFinished | None = field(default=None, init=False)
    started_at: float = field(default_factory=time.time, init=False)
    # Buffered, when started in the background.
    events: list[ev.Event] = field(default_factory=list, init=False)
    _changed: threading.Condition = field(default_factory=threading.Condition, init=False)
    _done: threading.Event = field(default_factory=threading.Event, init=False)
    _listener: Callable[[ev.Event | None], object] | None = field(default=None, init=False)

    def __iter__(self) -> Iterator[ev.Event]:
        for event in self._events:
            if isinstance(event, ev.RunFinished):
                self.status = event.status
                self.finished = event
            yield event

    def cancel(self) -> None:
        """Stop at the next safe point; every tool call still gets its answer."""
        self._cancel.set()

    def collect(self) -> list[ev.Event]:
        return list(self)

    def result(self) -> ev.Done:
        done = next(iter(self))
        assert isinstance(done, ev.Done), done
        return done

    def start(self, listener: Callable[[ev.Event | None], object] | None = None) -> Run:
        """Drive the run on a thread; each event also to `listener` (None after the last)."""
        self._listener = listener
        threading.Thread(
            target=self._drive, name=f"gatehouse-run-{self.thread_id[:8]}", daemon=True
        ).start()
        return self

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, cursor: int, timeout: float = 0.5) -> list[ev.Event]:
        """Events after position `cursor`, waiting up to `timeout` for new ones."""
        with self._changed:
            if len(self.events) <= cursor and not self.done:
                self._changed.wait(timeout)
            return self.events[cursor:]

    def join(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _drive(self) -> None:
        try:
            for event in self:
                self._push(event)
        except Exception as exc:  # the session reports errors as events; this is a last guard
            self._push(
                ev.ErrorEvent(thread_id=self.thread_id, message=f"{type(exc).__name__}: {exc}")
            )
            self.finished = ev.RunFinished(
                thread_id=self.thread_id, status="failed", reason=str(exc)
            )
            self.status = "failed"
            self._push(self.finished)
        finally:
            with self._changed:
                self._done.set()
                self._changed.notify_all()
            if self._listener is not None:
                self._listener(None)

    def _push(self, event: ev.Event) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()
        if self._listener is not None:
            self._listener(event)


def drive(
    reads: ThreadReads,
    thread_id: str,
    payload: Any,
    *,
    kind: str,
    cancel: threading.Event,
    config: RunnableConfig,
    lease: Lease | None = None,
    auto_approve: threading.Event | None = None,
    running: bool = False,
) -> Iterator[ev.Event]:
    """The events of one run, ending with `RunFinished`; `lease` released before them.
    `running`: the caller marked the thread running already (with its title)."""
    agent, storage, live = reads.agent, reads.storage, reads.live
    index = storage.index
    if lease is not None:
        lease.start_renewing()
    held: list[ev.Event] = []
    # The status the run ends with, written with its lease's release (one transaction).
    end: tuple[str, str | None] | None = None
    seen = _Seen()
    gate = EventGate(live, thread_id)
    live.begin(thread_id, cancel)
    try:
        # `trusted`: built unvalidated, as the agent's own events are (events.py).
        yield ev.RunStarted.trusted(thread_id=thread_id, run_id=uuid.uuid4().hex, kind=kind)
        try:
            if not running:
                index.touch(thread_id, status="running")
            context = RunContext.with_cancel(cancel, auto_approve=auto_approve)
            for mode, chunk in stream_run(agent, payload, config, context):
                if mode == EVENT:
                    # Only Gatehouse's own events; a user's writer output is not one.
                    if isinstance(chunk, ev.EVENT_TYPES):
                        yield from gate.event(cast(ev.Event, chunk))
                    continue
                seen.see(chunk)
                yield from gate.update(chunk)
                # Announced once saved and the lease free: it may be answered at once.
                held += [
                    ev.ApprovalRequired(thread_id=thread_id, interrupt_id=i.id, request=i.value)
                    for i in (chunk.get(INTERRUPT, ()) if isinstance(chunk, dict) else ())
                ]
            yield from gate.rest()
            status, reason = outcome(
                agent, thread_id, paused=bool(held), seen=seen if kind != "retry" else None
            )
            # Gatehouse's saver wrote a pause or a plain end already (issue 58).
            if not (
                reason is None
                and status in ("awaiting_approval", "completed")
                and getattr(agent.checkpointer, "side_tables", False)
                and agent.checkpointer is storage.checkpointer
            ):
                end = status, reason
            reply = seen.reply
            final = [
                *held,
                ev.RunFinished.trusted(
                    thread_id=thread_id,
                    status=status,
                    reason=reason,
                    text=None if reply is None else text_of(reply.content),
                    message_id=None if reply is None else reply.id,
                ),
            ]
        except Exception as exc:
            message, error_kind, retryable = describe_error(exc)
            if error_kind == "storage":
                message = storage_message(exc, message, storage.location)
            # May fail too; a run that failed before its answer was saved still awaits.
            with suppress(Exception):
                if reads.reader is not None:
                    paused = reads.reader.pending(thread_id) is not None
                else:
                    paused = bool(agent.get_state(thread_config(thread_id)).interrupts)
                failed = "awaiting_approval" if paused else "failed"
                end = failed, message
            final = [
                *gate.rest(),
                ev.ErrorEvent(
                    thread_id=thread_id, message=message, kind=error_kind, retryable=retryable
                ),
                ev.RunFinished(thread_id=thread_id, status="failed", reason=message),
            ]
    finally:
        live.end(thread_id)  # the run's steps are saved (or it failed)
        # Before the last events: a client that reacts at once must find it free.
        if lease is not None:
            lease.release(None if end is None else touching(thread_id, *end))
        elif end is not None:
            with suppress(Exception):  # as a failed run's: the run's events say how it ended
                index.touch(thread_id, status=end[0], reason=end[1])
    yield from final


def outcome(
    agent: CompiledStateGraph[Any, Any, Any, Any],
    thread_id: str,
    *,
    paused: bool,
    seen: _Seen | None,
) -> tuple[str, str | None]:
    """How the run ended: from what it streamed (`seen`), else from the saved state."""
    if paused:
        return "awaiting_approval", None
    if seen is not None:
        values: Mapping[str, Any] = seen.values
    else:
        state = agent.get_state(thread_config(thread_id))
        if state.interrupts:
            return "awaiting_approval", None
        values = state.values or {}
    if values.get(STOP_REASON):
        return stop_status(values.get(STOP_KIND)), values[STOP_REASON]
    return "completed", None


@dataclass
class _Seen:
    """The last stop keys a run's `updates` wrote, and the model's last reply."""

    values: dict[str, Any] = field(default_factory=dict)
    reply: AIMessage | None = None

    def see(self, chunk: Any) -> None:
        for node, update in chunk.items() if isinstance(chunk, dict) else ():
            if not isinstance(update, dict):
                continue
            self.values.update({k: update[k] for k in STOP_KEYS if k in update})
            # Its reply is the last AI message (a hook may add others before it).
            if node == "model" and update.get("run_model_calls"):
                replies = [
                    m
                    for m in update.get("messages") or ()
                    if isinstance(m, AIMessage) and not m.additional_kwargs.get(NOTICE_MARK)
                ]
                if replies:
                    self.reply = replies[-1]


# What `stream_run` yields besides `updates` chunks: one of the run's events.
EVENT = "custom"
_DONE = "done"
_FAILED = "failed"


def stream_run(
    agent: CompiledStateGraph[Any, Any, Any, Any],
    payload: Any,
    config: RunnableConfig,
    context: RunContext,
) -> Iterator[tuple[str, Any]]:
    """One run as `("updates", chunk)` and `(EVENT, event)` pairs, run on a worker thread
    (its error raised here). As in LangGraph's own stream, a step starts only once the caller
    asked past the previous update, so a cancel is seen by the next step; closing early stops
    the run after the step under way. `durability="sync"`: no step's result can be lost to a
    crash after the next one began, and it is faster here than the thread handoff."""
    items: SimpleQueue[tuple[str, Any]] = SimpleQueue()
    context.send_events_to(lambda event: items.put((EVENT, event)))
    stop = threading.Event()
    stopped = threading.Event()
    taken = threading.Semaphore(0)  # released each time the caller asks past an update
    worker: list[int] = []

    def run() -> None:
        worker.append(threading.get_ident())
        try:
            for chunk in agent.stream(
                payload, config, stream_mode="updates", context=context, durability="sync"
            ):
                items.put(("updates", chunk))
                taken.acquire()
                if stop.is_set():
                    break
        except BaseException as exc:  # handed to the caller's thread, raised there
            items.put((_FAILED, exc))
        else:
            items.put((_DONE, None))
        finally:
            stopped.set()

    run_in_worker(run)
    try:
        while True:
            mode, item = items.get()
            if mode == _DONE:
                return
            if mode == _FAILED:
                raise item
            yield mode, item
            if mode == "updates":
                taken.release()
    finally:
        stop.set()
        taken.release()  # a worker waiting for the caller goes on, to see `stop`
        # Not when finalised on the worker itself (by the GC): it would wait for itself.
        if threading.get_ident() not in worker:
            stopped.wait()
