"""One run of the agent: the `Run` a front end iterates (or starts in the background),
and `drive`, the one pump that turns what the run streams into
`graph.protocol.events` events, ending with `RunFinished`. The Session decides what a
run starts from and holds the thread's lease; this module runs it.

Why not LangGraph's `custom` stream for the run's own events: with `custom` (or
`messages`) in its stream modes LangGraph runs every task of every step on a thread
pool built for each run, with a second thread waiting on the stream, about a quarter
of a short turn (BENCHMARKS.md); `messages` also scans the whole state at the start of
every node. So `stream_run` streams only `updates` and takes the events nodes emit
(graph/agent/emit.py) from a sink in the run's context; the whole run runs on one
worker thread (graph/service/workers.py). LangGraph Server clients still get the
events in `custom`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from queue import SimpleQueue
from typing import Any, cast

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from graph.agent.context import RunContext
from graph.agent.history import text_of
from graph.agent.state import STOP_KEYS
from graph.protocol import events as ev
from graph.protocol.state_keys import STOP_KIND, STOP_REASON, stop_status
from graph.protocol.threads import NOTICE_MARK
from graph.service.errors import describe_error, storage_message
from graph.service.live_reads import EventGate, LiveMessages
from graph.service.reads import thread_config
from graph.service.workers import run_in_worker
from graph.store.langgraph_private import INTERRUPT
from graph.store.leases import Lease
from graph.store.storage import Storage

__all__ = ["Run", "drive"]


class Run:
    """One run's events. Iterate it to drive the run here; or `start()` it to drive
    it on a background thread that buffers its events, for pages that come and go
    (Streamlit reruns its script on every click) and read them with `wait(cursor)`.
    `status` is set at the end."""

    def __init__(
        self,
        thread_id: str,
        events: Iterator[ev.Event],
        cancel: threading.Event | None = None,
        *,
        kind: str = "message",
        user_text: str | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.kind = kind
        # The message that started it (not yet in the thread's history at start).
        self.user_text = user_text
        # Messages the thread had before the run: where a page draws the live run.
        self.base_messages: int | None = None
        self.status: ev.RunStatus | None = None
        # The run's last event: its status, and its final reply (`text`, `message_id`).
        self.finished: ev.RunFinished | None = None
        self.started_at = time.time()
        self.events: list[ev.Event] = []  # buffered, when started in the background
        self._events = events
        self._cancel = cancel or threading.Event()
        self._changed = threading.Condition()
        self._done = threading.Event()
        self._listener: Callable[[ev.Event | None], object] | None = None

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
        """What an operation that starts no run did: its one event."""
        done = next(iter(self))
        assert isinstance(done, ev.Done), done
        return done

    # -- in the background ---------------------------------------------------------
    def start(self, listener: Callable[[ev.Event | None], object] | None = None) -> Run:
        """Drive the run on a background thread; its events collect in `events` and go to
        `listener` as they come (None after the last)."""
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
    agent: CompiledStateGraph[Any, Any, Any, Any],
    storage: Storage,
    live: LiveMessages,
    thread_id: str,
    payload: Any,
    *,
    kind: str,
    cancel: threading.Event,
    config: RunnableConfig,
    lease: Lease | None = None,
    auto_approve: threading.Event | None = None,
) -> Iterator[ev.Event]:
    """The events of one run of `agent` on the thread from `payload` (its input: a
    message, a `Command`, or None to continue), ending with `RunFinished`. Releases
    `lease` when the run is over, before the last events."""
    index = storage.index
    if lease is not None:
        lease.start_renewing()
    held: list[ev.Event] = []
    seen = _Seen()
    gate = EventGate(live, thread_id)
    live.begin(thread_id, cancel)
    try:
        # `trusted`: built unvalidated, as the agent's own events are (events.py).
        yield ev.RunStarted.trusted(thread_id=thread_id, run_id=uuid.uuid4().hex, kind=kind)
        try:
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
                # Announce a pause only once the run is over and the pause saved (the
                # lease too is free by then): a client may answer it at once, elsewhere.
                held += [
                    ev.ApprovalRequired(thread_id=thread_id, interrupt_id=i.id, request=i.value)
                    for i in (chunk.get(INTERRUPT, ()) if isinstance(chunk, dict) else ())
                ]
            yield from gate.rest()
            status, reason = outcome(
                agent, thread_id, paused=bool(held), seen=seen if kind != "retry" else None
            )
            # Gatehouse's saver wrote a pause or a plain end with the checkpoint that
            # ended the run: the same row written again would cost a commit (issue 58).
            if not (
                reason is None
                and status in ("awaiting_approval", "completed")
                and getattr(agent.checkpointer, "side_tables", False)
                and agent.checkpointer is storage.checkpointer
            ):
                index.touch(thread_id, status=status, reason=reason)
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
            # The storage that just failed may refuse this too; the error says why.
            with suppress(Exception):
                # A run that failed before its answer was saved leaves the pause pending
                # (and in the inbox): awaiting again, with the reason.
                failed = (
                    "awaiting_approval" if still_paused(agent, storage, thread_id) else "failed"
                )
                index.touch(thread_id, status=failed, reason=message)
            final = [
                *gate.rest(),
                ev.ErrorEvent(
                    thread_id=thread_id, message=message, kind=error_kind, retryable=retryable
                ),
                ev.RunFinished(thread_id=thread_id, status="failed", reason=message),
            ]
    finally:
        live.end(thread_id)  # the run's steps are saved (or it failed)
        # Released before the last events: a client that reacts to them at once
        # (approves, sends again) must find the thread free.
        if lease is not None:
            lease.release()
    yield from final


def still_paused(
    agent: CompiledStateGraph[Any, Any, Any, Any], storage: Storage, thread_id: str
) -> bool:
    reader = storage.reader
    if reader is not None and agent.checkpointer is storage.checkpointer:
        return reader.pending(thread_id) is not None
    return bool(agent.get_state(thread_config(thread_id)).interrupts)


def outcome(
    agent: CompiledStateGraph[Any, Any, Any, Any],
    thread_id: str,
    *,
    paused: bool,
    seen: _Seen | None,
) -> tuple[str, str | None]:
    """How the run ended. From what the run streamed when that is enough (a pause,
    or the stop keys a new message or a resumed review starts from: unset), else
    from the saved state."""
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


class _Seen:
    """What a run's `updates` say: the last `stop_reason` / `stop_kind` its nodes
    wrote, and the model's last reply (the run's final text)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.reply: AIMessage | None = None

    def see(self, chunk: Any) -> None:
        for node, update in chunk.items() if isinstance(chunk, dict) else ():
            if not isinstance(update, dict):
                continue
            self.values.update({k: update[k] for k in STOP_KEYS if k in update})
            # The model node's update holds its reply last among its AI messages when it
            # called the model (it may also carry a hook's messages: a compacted history).
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
    """One run of `agent` from `payload`, as `("updates", chunk)` and `(EVENT, event)`
    pairs in the order they happen. The run goes on in a worker thread; an error it
    raises is raised here. As with LangGraph's own stream, a step starts only once the
    caller has taken the previous step's update and asked for more: what the caller
    does on an event (a cancel, a person's Stop) is seen by the next step. Closing the
    iterator early stops the run after the step under way and returns once it has
    stopped.

    `durability="sync"`: each step's checkpoint is written before the next step starts,
    not handed to a background thread: no step's result can be lost to a crash after
    the next one began, and it is also faster here than the thread handoff."""
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
        # Not when this iterator is finalised on the worker itself (the garbage collector
        # may run anywhere): it would wait for its own thread.
        if threading.get_ident() not in worker:
            stopped.wait()
