"""The session API: the one thing front ends talk to (never LangGraph internals).

    session = open_session()                  # graph.open_session: settings from gatehouse.toml
    for event in session.send(None, "list files"): ...
    pause = session.pending(thread_id)        # Approval | OutcomeUnknown | None
    for event in session.resume(thread_id, {"decisions": [{"type": "approve"}]}): ...

`send`, `resume` and `retry` return a `Run`: an iterator of `graph.protocol.events`
events that drives the agent while it is iterated. Answers are validated before
anything runs (`DecisionError`), with the same rules the graph applies to a raw
`Command`. The Session adds convenience (the run lease, events, the thread index),
not safety: the graph and its storage keep the approval guarantees themselves.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import ValidationError

from graph.agent.context import RunContext
from graph.agent.review import answering, args_problem, explain
from graph.agent.state import STOP_KEYS
from graph.protocol import events as ev
from graph.protocol.answers import OutcomeAnswer
from graph.protocol.errors import (
    AlreadyDecided,
    DecisionError,
    NothingPending,
    RunInProgress,
    StaleDecision,
    StorageError,
)
from graph.protocol.pauses import Approval, OutcomeUnknown, Pause, pause_from
from graph.protocol.threads import MessageView, ThreadInfo
from graph.service.errors import describe_error, is_storage_error, storage_message
from graph.service.streaming import STREAM_MODES, translate
from graph.service.transcript import export_json, export_markdown, message_view
from graph.store.leases import Lease
from graph.store.storage import Storage

TITLE_CHARS = 60
# The channel of LangGraph's interrupt writes (private in langgraph.constants).
INTERRUPT_CHANNEL = "__interrupt__"


class Run:
    """One run's events. Iterate it to drive the run here; or `start()` it to drive
    it on a background thread that buffers its events, for pages that come and go
    (Streamlit reruns its script on every click) and read them with `wait(cursor)`.
    `status` is set at the end."""

    def __init__(
        self,
        thread_id: str,
        events: Iterator[ev.Event],
        cancel: threading.Event,
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
        self.status: str | None = None
        self.started_at = time.time()
        self.events: list[ev.Event] = []  # buffered, when started in the background
        self._events = events
        self._cancel = cancel
        self._changed = threading.Condition()
        self._done = threading.Event()

    def __iter__(self) -> Iterator[ev.Event]:
        for event in self._events:
            if isinstance(event, ev.RunFinished):
                self.status = event.status
            yield event

    def cancel(self) -> None:
        """Stop at the next safe point; every tool call still gets its answer."""
        self._cancel.set()

    def collect(self) -> list[ev.Event]:
        return list(self)

    # -- in the background ---------------------------------------------------------
    def start(self) -> Run:
        """Drive the run on a background thread; its events collect in `events`."""
        threading.Thread(target=self._drive, name=f"gatehouse-run-{self.thread_id[:8]}", daemon=True).start()
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

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ev.TextDelta))

    def _drive(self) -> None:
        try:
            for event in self:
                self._push(event)
        except Exception as exc:  # the session reports errors as events; this is a last guard
            self._push(ev.ErrorEvent(thread_id=self.thread_id, message=f"{type(exc).__name__}: {exc}"))
            self._push(ev.RunFinished(thread_id=self.thread_id, status="failed", reason=str(exc)))
        finally:
            with self._changed:
                self._done.set()
                self._changed.notify_all()

    def _push(self, event: ev.Event) -> None:
        with self._changed:
            self.events.append(event)
            if isinstance(event, ev.RunFinished):
                self.status = event.status
            self._changed.notify_all()


class Session:
    def __init__(
        self,
        agent: CompiledStateGraph,
        storage: Storage,
        tools: Sequence[BaseTool],
        *,
        closers: Sequence[Any] = (),
        info: Mapping[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.storage = storage
        self.tools = {t.name: t for t in tools}
        self.info = dict(info or {})
        self._closers = list(closers)

    # -- runs ---------------------------------------------------------------
    @staticmethod
    def new_thread_id() -> str:
        return uuid.uuid4().hex

    def send(self, thread_id: str | None, text: str, *, owner: str | None = None) -> Run:
        """Start a turn with a user message (a new thread when `thread_id` is None)."""
        if not text.strip():
            raise ValueError("a message cannot be empty")
        thread_id = thread_id or self.new_thread_id()
        with self._leased(thread_id) as lease:
            if self._may_be_paused(thread_id) and self.pending(thread_id) is not None:
                raise DecisionError(
                    f"thread {thread_id} is waiting for a decision on a tool call; answer it first"
                )
            self.storage.index.touch(thread_id, title=_title(text), owner=owner)
            return self._run(thread_id, {"messages": [HumanMessage(text)]}, "message", lease, user_text=text)

    def resume(self, thread_id: str, answer: Any, *, interrupt_id: str | None = None) -> Run:
        """Answer the pending approval request: `{"decisions": [...]}` in request order
        (or keyed by tool call id). Raises `DecisionError` and changes nothing when the
        answer does not fit the request. When another run is already acting on the
        thread (a double click, two tabs, two processes) raises `AlreadyDecided`."""
        with self._leased(thread_id, deciding=True) as lease:
            # Checked under the lease: a run that decided it a moment ago has finished.
            pending = self.pending(thread_id)
            if pending is None:
                raise NothingPending(f"thread {thread_id} is not waiting for a decision (already decided?)")
            if interrupt_id is not None and interrupt_id != pending.interrupt_id:
                raise StaleDecision(
                    f"approval request {interrupt_id} is no longer pending on thread {thread_id} "
                    "(it was already decided); reload to see the current request"
                )
            try:
                if isinstance(pending, OutcomeUnknown):
                    OutcomeAnswer.model_validate(answer)
                else:
                    with answering(pending.request.wire(), self.tools) as schema:
                        schema.model_validate(answer)
            except ValidationError as exc:
                raise DecisionError(explain(exc)) from None
            return self._run(thread_id, Command(resume={pending.interrupt_id: answer}), "resume", lease)

    def retry(self, thread_id: str) -> Run:
        """Continue a run that failed or whose process died, from its last checkpoint."""
        with self._leased(thread_id) as lease:
            return self._run(thread_id, None, "retry", lease)

    @contextmanager
    def _leased(self, thread_id: str, *, deciding: bool = False) -> Iterator[Lease | None]:
        """The thread's run lease (graph/store/leases.py), released again if starting
        fails. When `deciding`, a thread that is busy means the decision came too late
        (a double click, another tab or process): `AlreadyDecided`."""
        leases = self.storage.leases
        if leases is None:
            yield None
            return
        what = "a decision on this approval request" if deciding else "a run"
        try:
            lease = leases.acquire(thread_id, what=what)
        except RunInProgress as exc:
            if deciding:
                raise AlreadyDecided(f"{exc} (already decided / already running)") from None
            raise
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            message = storage_message(exc, describe_error(exc)[0], self.storage.location)
            raise StorageError(f"cannot start a run on thread {thread_id}: {message}") from exc
        try:
            yield lease
        except BaseException:
            lease.release()
            raise

    def _run(
        self, thread_id: str, payload: Any, kind: str, lease: Lease | None = None, *, user_text: str | None = None
    ) -> Run:
        cancel = threading.Event()
        return Run(thread_id, self._events(thread_id, payload, kind, cancel, lease), cancel, kind=kind, user_text=user_text)

    def _events(
        self, thread_id: str, payload: Any, kind: str, cancel: threading.Event, lease: Lease | None = None
    ) -> Iterator[ev.Event]:
        config = _config(thread_id)
        index = self.storage.index
        if lease is not None:
            lease.start_renewing()
        held: list[ev.Event] = []
        stop = _StopSeen()
        try:
            yield ev.RunStarted(thread_id=thread_id, run_id=uuid.uuid4().hex, kind=kind)  # type: ignore[arg-type]
            try:
                index.touch(thread_id, status="running")
                # durability="sync": each step's checkpoint is written before the next
                # step starts, not handed to a background thread: no step's result can
                # be lost to a crash after the next one began, and it is also faster
                # here than the thread handoff (bench/, BENCHMARKS.md).
                for mode, chunk in self.agent.stream(
                    payload, config, stream_mode=STREAM_MODES, context=RunContext(cancel=cancel), durability="sync"
                ):
                    if mode == "updates":
                        stop.see(chunk)
                    for event in translate(mode, chunk, thread_id):
                        # Announce a pause only once the run is over and the pause saved
                        # (the lease too is free by then): a client may answer it at once,
                        # elsewhere.
                        if isinstance(event, ev.ApprovalRequired):
                            held.append(event)
                        else:
                            yield event
                status, reason = self._outcome(config, paused=bool(held), stop=stop if kind != "retry" else None)
                index.touch(thread_id, status=status)
                final = [*held, ev.RunFinished(thread_id=thread_id, status=status, reason=reason)]  # type: ignore[arg-type]
            except Exception as exc:
                message, error_kind, retryable = describe_error(exc)
                if error_kind == "storage":
                    message = storage_message(exc, message, self.storage.location)
                # The storage that just failed may refuse this too; the error says why.
                with suppress(Exception):
                    index.touch(thread_id, status="failed")
                final = [
                    ev.ErrorEvent(thread_id=thread_id, message=message, kind=error_kind, retryable=retryable),
                    ev.RunFinished(thread_id=thread_id, status="failed", reason=message),
                ]
        finally:
            # Released before the last events: a client that reacts to them at once
            # (approves, sends again) must find the thread free.
            if lease is not None:
                lease.release()
        yield from final

    def _outcome(self, config: dict[str, Any], *, paused: bool, stop: _StopSeen | None) -> tuple[str, str | None]:
        """How the run ended. From what the run streamed when that is enough (a pause,
        or the stop keys a new message or a resumed review starts from: unset), else
        from the saved state."""
        if paused:
            return "awaiting_approval", None
        if stop is not None:
            values: Mapping[str, Any] = stop.values
        else:
            state = self.agent.get_state(config)
            if state.interrupts:
                return "awaiting_approval", None
            values = state.values or {}
        if values.get("stop_reason"):
            return ("cancelled" if values.get("stop_kind") == "cancelled" else "stopped"), values["stop_reason"]
        return "completed", None

    def _may_be_paused(self, thread_id: str) -> bool:
        """False when the thread's head checkpoint holds no interrupt at all: a cheap
        read that spares most sends the full state read of `pending`."""
        saved = self.agent.checkpointer.get_tuple(_config(thread_id))  # type: ignore[union-attr]
        return saved is not None and any(channel == INTERRUPT_CHANNEL for _, channel, _ in saved.pending_writes or ())

    # -- reading threads ------------------------------------------------------
    def pending(self, thread_id: str) -> Pause | None:
        """What the thread waits for: an approval first, else an outcome-unknown call."""
        reader = self.storage.reader
        if reader is not None and self.agent.checkpointer is self.storage.checkpointer:
            # The interrupts at the latest checkpoint, read directly: what get_state
            # lists, without rebuilding the thread's messages (graph/store/reader.py).
            return reader.pending(thread_id)
        state = self.agent.get_state(_config(thread_id))
        pauses = [pause_from(thread_id, i.id, i.value) for i in state.interrupts]
        return next((p for p in pauses if isinstance(p, Approval)), None) or next(
            (p for p in pauses if isinstance(p, OutcomeUnknown)), None
        )

    def messages(self, thread_id: str) -> list[BaseMessage]:
        """The thread's messages as LangChain objects (for embedders and tests; front
        ends read `transcript`)."""
        return list((self.agent.get_state(_config(thread_id)).values or {}).get("messages", []))

    def transcript(self, thread_id: str) -> list[MessageView]:
        """The thread's messages as plain data, for front ends."""
        return [message_view(m) for m in self.messages(thread_id)]

    def check_args(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """Why `args` would not pass the tool's schema (as an edit would be refused),
        or None when they would."""
        tool = self.tools.get(tool_name)
        if tool is None:
            return f"no tool named {tool_name!r}"
        return args_problem(tool, args)

    def usage(self, thread_id: str) -> dict[str, float]:
        return dict((self.agent.get_state(_config(thread_id)).values or {}).get("usage", {}))

    def threads(self, limit: int = 200) -> list[ThreadInfo]:
        return [self._live(t) for t in self.storage.index.list(limit=limit)]

    def thread(self, thread_id: str) -> ThreadInfo | None:
        info = self.storage.index.get(thread_id)
        return None if info is None else self._live(info)

    def _live(self, info: ThreadInfo) -> ThreadInfo:
        # "running" is written when a run starts; a process killed mid-run never
        # overwrites it. Without a live lease the run is gone: say so (resume/retry).
        leases = self.storage.leases
        if info.status == "running" and leases is not None and leases.holder(info.thread_id) is None:
            return dataclasses.replace(info, status="interrupted")
        return info

    def awaiting_approval(self) -> list[ThreadInfo]:
        return self.storage.index.pending()

    def exists(self, thread_id: str) -> bool:
        return self.thread(thread_id) is not None or bool(self.messages(thread_id))

    # -- changing threads -----------------------------------------------------
    def rename(self, thread_id: str, title: str) -> None:
        self.storage.index.rename(thread_id, title.strip() or "Untitled")

    def delete(self, thread_id: str) -> None:
        self.storage.delete_thread(thread_id)

    def undo(self, thread_id: str) -> int:
        """Drop the last user turn (and everything after it); returns messages removed.
        History stays in the checkpoints: this moves the thread head back."""
        return self._rewind(thread_id, _last_human_index(self.messages(thread_id)))

    def fork(self, thread_id: str, message_index: int, text: str) -> Run:
        """Replace the user message at `message_index` with `text` and continue from there."""
        messages = self.messages(thread_id)
        if not (0 <= message_index < len(messages)) or not isinstance(messages[message_index], HumanMessage):
            raise ValueError(f"message {message_index} is not a user message of thread {thread_id}")
        self._rewind(thread_id, message_index)
        return self.send(thread_id, text)

    def _rewind(self, thread_id: str, keep: int | None) -> int:
        if keep is None:
            return 0
        config = _config(thread_id)
        for snapshot in self.agent.get_state_history(config):
            msgs = (snapshot.values or {}).get("messages", [])
            # The checkpoint at the end of the earlier run: `keep` messages, nothing
            # next (for keep == 0: the thread's first, empty checkpoint).
            if len(msgs) == keep and (not snapshot.next or keep == 0):
                removed = len(self.messages(thread_id)) - keep
                self.agent.update_state(snapshot.config, {"stop_reason": None}, as_node="finish")
                self.storage.index.touch(thread_id, status="idle")
                return removed
            if len(msgs) < keep:
                break
        raise ValueError(f"no checkpoint of thread {thread_id} ends with {keep} messages")

    def export(self, thread_id: str, fmt: str = "md") -> str:
        """The transcript as Markdown or JSON."""
        messages = self.messages(thread_id)
        info = self.thread(thread_id)
        title = info.title if info else thread_id
        if fmt == "json":
            return export_json(thread_id, title, messages)
        if fmt != "md":
            raise ValueError(f"unknown export format {fmt!r}; use md or json")
        return export_markdown(thread_id, title, messages)

    def compact_now(self, thread_id: str) -> ev.Compacted | None:
        """Summarise the older part of a thread now, with the agent's `Compaction`
        hook; None when nothing is old enough. Only between runs, never mid-approval."""
        hooks = getattr(self.agent, "gatehouse_hooks", None)
        compaction = next((h for h in hooks or () if callable(getattr(h, "compact", None))), None)
        if compaction is None:
            raise ValueError("this agent has no Compaction hook (see docs/hooks.md)")
        if self.pending(thread_id) is not None:
            raise DecisionError(f"thread {thread_id} is waiting for a decision; answer it first")
        config = _config(thread_id)
        snapshot = self.agent.get_state(config)
        if snapshot.next:
            raise ValueError(f"thread {thread_id} has an unfinished run; retry or finish it first")
        planned = compaction.compact(snapshot.values or {}, force=True)
        if planned is None:
            return None
        update, counts = planned
        self.agent.update_state(config, update, as_node="finish")
        return ev.Compacted(thread_id=thread_id, **counts)

    def close(self) -> None:
        hooks = getattr(self.agent, "gatehouse_hooks", None)
        try:
            for close in self._closers:
                close()
            if hooks is not None:
                hooks.close()  # once, after the agent's last run (see graph.hooks)
        finally:
            self.storage.close()


class _StopSeen:
    """The last `stop_reason` / `stop_kind` a run's nodes wrote, from its `updates`."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def see(self, chunk: Any) -> None:
        for update in chunk.values() if isinstance(chunk, dict) else ():
            if isinstance(update, dict):
                self.values.update({k: update[k] for k in STOP_KEYS if k in update})


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def _last_human_index(messages: list[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return i
    return None
