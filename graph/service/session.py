"""The session API: the one thing front ends talk to (never LangGraph internals).

    session = open_session()                  # graph.open_session: settings from gatehouse.toml
    for event in session.send(None, "list files"): ...
    pause = session.pending(thread_id)        # Approval | OutcomeUnknown | None
    for event in session.resume(thread_id, {"decisions": [{"type": "approve"}]}): ...

`send`, `resume` and `retry` return a `Run`: an iterator of `graph.protocol.events`
events that drives the agent while it is iterated. Each also takes `callbacks`, `tags`
and `metadata` for tracing (LangSmith groups a thread's runs by the thread id, which
every run carries as `metadata["thread_id"]`), and `source` /
`actor` for the decision log (default: the Session's). Answers are validated before
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

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import ValidationError

from graph.agent.compiled import GatehouseGraph
from graph.agent.context import RunContext
from graph.agent.history import text_of
from graph.agent.model_call import CUT_OFF_KIND
from graph.agent.offload import offloaded
from graph.agent.review import answering, args_problem, explain
from graph.agent.state import STOP_KEYS
from graph.protocol import events as ev
from graph.protocol.answers import OutcomeAnswer, ReviewAnswer
from graph.protocol.decisions import ALL_TOOLS, DecisionRecord, StandingGrant, who_decided
from graph.protocol.errors import (
    AlreadyDecided,
    AwaitingDecision,
    DecisionError,
    ImportRefused,
    NothingPending,
    RunInProgress,
    StaleDecision,
    StorageError,
)
from graph.protocol.operations import Decide, Fork, Operation, Retry, RunOptions, SendMessage
from graph.protocol.pauses import Approval, OutcomeUnknown, Pause, pause_from
from graph.protocol.threads import (
    NOTICE_MARK,
    Branches,
    MessageView,
    ThreadInfo,
    check_thread_id,
    thread_id_problem,
)
from graph.protocol.tools import spec_of
from graph.service import handover
from graph.service.branches import ThreadTree, first_user
from graph.service.errors import describe_error, is_storage_error, storage_message
from graph.service.live_reads import EventGate, LiveMessages
from graph.service.standing import find_grant, grants_in_force, revoke_record
from graph.service.streaming import STREAM_MODES, translate
from graph.service.transcript import export_json, export_markdown, message_view, read_export
from graph.store.decisions import switch_record
from graph.store.langgraph_private import INTERRUPT as INTERRUPT_CHANNEL
from graph.store.leases import Lease
from graph.store.storage import Storage
from graph.store.threads import first_user_text, title_of


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
        # The run's last event: its status, and its final reply (`text`, `message_id`).
        self.finished: ev.RunFinished | None = None
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
                self.finished = event
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
                self.finished = event
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
        source: str | None = None,
        actor: str | None = None,
        auto_approve: bool = False,
    ) -> None:
        """`source` and `actor`: what the decision log records for the decisions made
        through this session, unless a call names its own (the front end: "web",
        "terminal", "api"; who: a person's name, an OS user)."""
        self.agent = agent
        self.storage = storage
        self.tools = {t.name: t for t in tools}
        self.info = dict(info or {})
        self.source = source or "api"
        self.actor = actor
        self._closers = list(closers)
        # This session's auto-approve mode, handed to each run it starts in a private
        # field of the run context: no client of the graph can set it.
        self._auto_approve = threading.Event()
        if auto_approve:
            self._auto_approve.set()
        # The messages of runs going on now, for reads that agree with their events.
        self._live_messages = LiveMessages()
        own_saver = storage.reader is not None and agent.checkpointer is storage.checkpointer
        self._tree = ThreadTree(agent, storage.reader if own_saver else None)

    # -- auto-approve ---------------------------------------------------------
    @property
    def auto_approve(self) -> bool:
        """Whether this session's auto-approve mode is on: every run it starts (and
        each run under way, from its next model turn) runs calls that would ask for
        approval without asking. `deny` still refuses; each such call is journaled and
        recorded in the decision log as "auto_approve"."""
        return self._auto_approve.is_set()

    def set_auto_approve(self, on: bool) -> None:
        """Turn this session's auto-approve mode on or off (not stored: it ends with the
        session). One run can also have it on or off whatever the session's mode:
        `send(..., auto_approve=True)` (and `resume`, `retry`, `fork`), e.g. for a web
        app whose one Session serves many browser sessions."""
        if on:
            self._auto_approve.set()
        else:
            self._auto_approve.clear()

    def thread_auto_approve(self, thread_id: str) -> bool:
        """Whether the thread's own auto-approve switch is on (kept in the database)."""
        check_thread_id(thread_id)
        decisions = self.storage.decisions
        return decisions is not None and any(tool == ALL_TOOLS for tool, _ in decisions.grants(thread_id))

    def set_thread_auto_approve(
        self, thread_id: str, on: bool, *, actor: str | None = None, source: str | None = None
    ) -> None:
        """Turn the thread's auto-approve switch on or off. Stored in the decision log
        (who, when, from where: this session's `actor` / `source` unless given), so it
        holds for every client of the thread, LangGraph Server included, until it is
        turned off; only this API writes it."""
        check_thread_id(thread_id)
        decisions = self.storage.decisions
        if decisions is None:
            raise ValueError("a thread's auto-approve switch needs storage with a decision log")
        if self.thread_auto_approve(thread_id) == on:
            return
        # After every earlier record of the thread: the latest one decides.
        latest = max((r.decided_at for r in decisions.for_thread(thread_id)), default=0.0)
        decided_at = max(time.time(), latest + 1e-3)
        decisions.record([switch_record(thread_id, on, source=source or self.source, actor=actor or self.actor,
                                        decided_at=decided_at)])

    def auto_approving(self, thread_id: str) -> str | None:
        """Why calls of this thread would be auto-approved now: "thread" (its switch),
        "session" (this session's mode), or None. What a front end shows while it is on."""
        if self.thread_auto_approve(thread_id):
            return "thread"
        return "session" if self.auto_approve else None

    # -- runs ---------------------------------------------------------------
    def submit(self, operation: Operation, options: RunOptions | None = None) -> Run:
        """The one way in for a front end: start the run `operation` asks for
        (graph/protocol/operations.py) with `options`. Raises as the operation's own
        method does (`DecisionError`, `AwaitingDecision`, `RunInProgress`, ...)."""
        given = options_dict(options)
        match operation:
            case SendMessage(thread_id, message, owner):
                return self.send(thread_id, message, owner=owner, **given)
            case Decide(thread_id, answer, interrupt_id):
                return self.resume(thread_id, wire_answer(answer), interrupt_id=interrupt_id, **given)
            case Retry(thread_id):
                return self.retry(thread_id, **given)
            case Fork(thread_id, message_index, text, force):
                return self.fork(thread_id, message_index, text, force=force, **given)
        raise TypeError(f"not an operation: {operation!r}")

    @staticmethod
    def new_thread_id() -> str:
        # Dashed, as LangGraph Server requires: a thread started here opens in Studio.
        return str(uuid.uuid4())

    def send(
        self,
        thread_id: str | None,
        message: str | list[Any],
        *,
        owner: str | None = None,
        callbacks: Sequence[BaseCallbackHandler] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        actor: str | None = None,
        auto_approve: bool | None = None,
    ) -> Run:
        """Start a turn with a user message (a new thread when `thread_id` is None): a
        string, or content blocks (`[{"type": "text", "text": ...}]`) as LangGraph
        clients such as Agent Chat UI send them. Raises `AwaitingDecision` while the
        thread waits for a decision."""
        text = text_of(message)
        if not text.strip():
            raise ValueError("a message cannot be empty")
        thread_id = thread_id or self.new_thread_id()
        options = RunOptions(callbacks, tags, metadata, source, actor, auto_approve)
        with self._leased(thread_id) as lease:
            if self._may_be_paused(thread_id) and self.pending(thread_id) is not None:
                raise AwaitingDecision(
                    f"thread {thread_id} is waiting for a decision on a tool call; answer it first"
                )
            return self._send(thread_id, message, text, lease, options, owner=owner)

    def _send(
        self, thread_id: str, message: str | list[Any], text: str, lease: Lease | None, options: RunOptions,
        *, owner: str | None = None,
    ) -> Run:
        self.storage.index.touch(thread_id, title=title_of(text), owner=owner)
        return self._run(thread_id, {"messages": [HumanMessage(message)]}, "message", lease, options, user_text=text)

    def resume(
        self,
        thread_id: str,
        answer: Any,
        *,
        interrupt_id: str | None = None,
        callbacks: Sequence[BaseCallbackHandler] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        actor: str | None = None,
        auto_approve: bool | None = None,
        reject_missing: bool | str = False,
    ) -> Run:
        """Answer the pending approval request: `{"decisions": [...]}` in request order
        (or keyed by tool call id). `reject_missing` (True or a reason): calls the
        answer does not decide are rejected (the answer's own `reject_missing` field,
        which raw `Command` clients set). Raises `DecisionError` and changes nothing when the
        answer does not fit the request. When another run is already acting on the
        thread (a double click, two tabs, two processes) raises `AlreadyDecided`.
        The decision log records the answer with `source` and `actor`."""
        options = RunOptions(callbacks, tags, metadata, source, actor, auto_approve)
        if reject_missing is not False and isinstance(answer, Mapping):
            answer = {**answer, "reject_missing": reject_missing}
        with self._leased(thread_id, deciding=True) as lease:
            # Checked under the lease: a run that decided it a moment ago has finished.
            pending = self.pending(thread_id)
            if pending is None:
                done = who_decided(self.audit(thread_id, limit=50))
                raise NothingPending(f"thread {thread_id} is not waiting for a decision"
                                     + (f": it was already decided ({done})" if done else ""))
            if interrupt_id is not None and interrupt_id != pending.interrupt_id:
                if self._was_asked(thread_id, interrupt_id):
                    done = who_decided(self.audit(thread_id, limit=50))
                    raise StaleDecision(
                        f"approval request {interrupt_id} is no longer pending on thread {thread_id} "
                        f"(it was already decided{': ' + done if done else ''}); reload to see the current request"
                    )
                raise StaleDecision(
                    f"thread {thread_id} never asked approval request {interrupt_id}; the pending one is "
                    f"{pending.interrupt_id} (see `pending --json`)"
                )
            try:
                if isinstance(pending, OutcomeUnknown):
                    OutcomeAnswer.model_validate(answer)
                else:
                    with answering(pending.request.wire(), self._tools(), actor=options.actor or self.actor) as schema:
                        schema.model_validate(answer)
            except ValidationError as exc:
                raise DecisionError(explain(exc)) from None
            return self._run(thread_id, Command(resume={pending.interrupt_id: answer}), "resume", lease, options)

    def retry(
        self,
        thread_id: str,
        *,
        callbacks: Sequence[BaseCallbackHandler] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        actor: str | None = None,
        auto_approve: bool | None = None,
    ) -> Run:
        """Continue a run that failed or whose process died, from its last checkpoint."""
        options = RunOptions(callbacks, tags, metadata, source, actor, auto_approve)
        with self._leased(thread_id) as lease:
            return self._run(thread_id, self._retry_input(thread_id), "retry", lease, options)

    def _retry_input(self, thread_id: str) -> Any:
        """None continues from the last checkpoint. A run stopped by a cut-off reply has
        nothing left to continue: the model is asked again."""
        state = self.agent.get_state(_config(thread_id))
        if not state.next and (state.values or {}).get("stop_kind") == CUT_OFF_KIND:
            return Command(goto="model", update={"stop_reason": None, "stop_kind": None})
        return None

    def _tools(self) -> Mapping[str, BaseTool]:
        # The compiled agent's own (the built-in read_tool_output included) when known.
        return self.agent.gatehouse_tools if isinstance(self.agent, GatehouseGraph) else self.tools

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

    def _run(
        self, thread_id: str, payload: Any, kind: str, lease: Lease | None, options: RunOptions,
        *, user_text: str | None = None,
    ) -> Run:
        cancel = threading.Event()
        config = self._run_config(thread_id, options)
        if options.auto_approve is None:
            auto = self._auto_approve  # the session's switch, live
        else:
            auto = threading.Event()  # this run's own
            if options.auto_approve:
                auto.set()
        events = self._events(thread_id, payload, kind, cancel, config, lease, auto)
        return Run(thread_id, events, cancel, kind=kind, user_text=user_text)

    def _run_config(self, thread_id: str, options: RunOptions) -> dict[str, Any]:
        """The run's config: the thread, who acts (the decision log reads
        `gatehouse_source` / `gatehouse_actor`), and tracing. LangSmith groups the
        runs of a conversation by `metadata["thread_id"]` (it also reads `session_id`
        or `conversation_id`, which a caller may add). LangSmith itself is switched on
        by its environment variables (LANGSMITH_TRACING, LANGSMITH_API_KEY,
        LANGSMITH_PROJECT). LangGraph copies run metadata into every checkpoint's
        metadata, so nothing redundant is added here."""
        configurable: dict[str, Any] = {"thread_id": thread_id, "gatehouse_source": options.source or self.source}
        if actor := options.actor or self.actor:
            configurable["gatehouse_actor"] = actor
        config: dict[str, Any] = {
            "configurable": configurable,
            "metadata": {**(options.metadata or {}), "thread_id": thread_id},
        }
        if options.callbacks:
            config["callbacks"] = list(options.callbacks)
        if options.tags:
            config["tags"] = list(options.tags)
        return config

    def _events(
        self, thread_id: str, payload: Any, kind: str, cancel: threading.Event, config: dict[str, Any],
        lease: Lease | None = None, auto_approve: threading.Event | None = None,
    ) -> Iterator[ev.Event]:
        index = self.storage.index
        if lease is not None:
            lease.start_renewing()
        held: list[ev.Event] = []
        seen = _Seen()
        gate = EventGate(self._live_messages, thread_id)
        self._live_messages.begin(thread_id)
        try:
            yield ev.RunStarted(thread_id=thread_id, run_id=uuid.uuid4().hex, kind=kind)  # type: ignore[arg-type]
            try:
                index.touch(thread_id, status="running")
                # durability="sync": each step's checkpoint is written before the next
                # step starts, not handed to a background thread: no step's result can
                # be lost to a crash after the next one began, and it is also faster
                # here than the thread handoff (bench/, BENCHMARKS.md).
                context = RunContext.with_cancel(cancel, auto_approve=auto_approve)
                for mode, chunk in self.agent.stream(
                    payload, config, stream_mode=STREAM_MODES, context=context, durability="sync"
                ):
                    if mode == "updates":
                        seen.see(chunk)
                        yield from gate.update(chunk)
                    for event in translate(mode, chunk, thread_id):
                        # Announce a pause only once the run is over and the pause saved
                        # (the lease too is free by then): a client may answer it at once,
                        # elsewhere.
                        if isinstance(event, ev.ApprovalRequired):
                            held.append(event)
                        else:
                            yield from gate.event(event)
                yield from gate.rest()
                status, reason = self._outcome(_config(thread_id), paused=bool(held), seen=seen if kind != "retry" else None)
                index.touch(thread_id, status=status, reason=reason)
                reply = seen.reply
                final = [
                    *held,
                    ev.RunFinished(
                        thread_id=thread_id, status=status, reason=reason,  # type: ignore[arg-type]
                        text=None if reply is None else text_of(reply.content),
                        message_id=None if reply is None else reply.id,
                    ),
                ]
            except Exception as exc:
                message, error_kind, retryable = describe_error(exc)
                if error_kind == "storage":
                    message = storage_message(exc, message, self.storage.location)
                # The storage that just failed may refuse this too; the error says why.
                with suppress(Exception):
                    index.touch(thread_id, status="failed", reason=message)
                final = [
                    *gate.rest(),
                    ev.ErrorEvent(thread_id=thread_id, message=message, kind=error_kind, retryable=retryable),
                    ev.RunFinished(thread_id=thread_id, status="failed", reason=message),
                ]
        finally:
            self._live_messages.end(thread_id)  # the run's steps are saved (or it failed)
            # Released before the last events: a client that reacts to them at once
            # (approves, sends again) must find the thread free.
            if lease is not None:
                lease.release()
        yield from final

    def _outcome(self, config: dict[str, Any], *, paused: bool, seen: _Seen | None) -> tuple[str, str | None]:
        """How the run ended. From what the run streamed when that is enough (a pause,
        or the stop keys a new message or a resumed review starts from: unset), else
        from the saved state."""
        if paused:
            return "awaiting_approval", None
        if seen is not None:
            values: Mapping[str, Any] = seen.values
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
    def _was_asked(self, thread_id: str, interrupt_id: str, *, within: int = 400) -> bool:
        """Whether this thread paused with that interrupt id in its recent history (a
        stale tab's id) rather than never (a typo, another thread's id). Only read to
        word a refusal, so the walk's cost is paid on that path alone."""
        for snapshot in self.agent.get_state_history(_config(thread_id), limit=within):
            if any(i.id == interrupt_id for i in snapshot.interrupts):
                return True
        return False

    def pending(self, thread_id: str) -> Pause | None:
        """What the thread waits for: an approval first, else an outcome-unknown call."""
        check_thread_id(thread_id)
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
        ends read `transcript`). Read during a run of this Session, they include every
        message whose event the run has handed out (graph/service/live_reads.py)."""
        saved = list((self.agent.get_state(_config(thread_id)).values or {}).get("messages", []))
        return self._live_messages.read(thread_id, saved)

    def transcript(self, thread_id: str) -> list[MessageView]:
        """The thread's messages as plain data, for front ends."""
        return [message_view(m) for m in self.messages(thread_id)]

    def tool_output(self, thread_id: str, call_id: str) -> str | None:
        """The whole output of a tool call: the stored one when it was too large for the
        model's context (its result says `offloaded`), else the result in the thread.
        A call compacted out of the thread still has its stored output, if any. None
        when there is neither."""
        check_thread_id(thread_id)
        stored = self.storage.outputs.get(thread_id, call_id) if self.storage.outputs is not None else None
        result = next((m for m in reversed(self.messages(thread_id)) if getattr(m, "tool_call_id", None) == call_id), None)
        if result is None:
            return stored
        # A result that is not marked went into the context whole; a stored output
        # beside it belongs to an attempt that never finished (a crash).
        return stored if stored is not None and offloaded(result) else text_of(result.content)

    def check_args(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """Why `args` would not pass the tool's schema (as an edit would be refused),
        or None when they would."""
        tool = self._tools().get(tool_name)
        if tool is None:
            return f"no tool named {tool_name!r}"
        return args_problem(tool, args)

    def tool_summary(self, tool_name: str) -> str:
        """The first line of the tool's own description (what an approval card says
        the call does), or "" for an unknown tool."""
        tool = self._tools().get(tool_name)
        return (tool.description or "").strip().split("\n", 1)[0] if tool is not None else ""

    def preview(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """What a call with `args` would change (the tool's preview, e.g. a diff), as
        the approval request shows it for the model's arguments; None when the tool has
        no preview or the preview fails (an edited call is checked on submit)."""
        tool = self._tools().get(tool_name)
        render = spec_of(tool).preview if tool is not None else None
        if render is None:
            return None
        try:
            return render(dict(args))
        except Exception:  # noqa: BLE001 - a preview is a courtesy, never an error
            return None

    def usage(self, thread_id: str) -> dict[str, float]:
        return dict((self.agent.get_state(_config(thread_id)).values or {}).get("usage", {}))

    def threads(self, limit: int = 200) -> list[ThreadInfo]:
        return [self._live(t) for t in self.storage.index.list(limit=limit)]

    def thread(self, thread_id: str) -> ThreadInfo | None:
        check_thread_id(thread_id)
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

    def audit(self, thread_id: str | None = None, limit: int = 200) -> list[DecisionRecord]:
        """The decision log, newest first: every answer a person gave to a pause (and
        every automatic approval), with when, which call, the front end (`source`), who
        (`actor`) and, for an edit, what changed (`record.diff()`, `to_dict()["diff"]`).
        One thread's, or across threads. The log outlives undo, fork and deletion."""
        decisions = self.storage.decisions
        if decisions is None:
            return []
        if thread_id is not None:
            return list(reversed(decisions.for_thread(check_thread_id(thread_id))))[:limit]
        return decisions.recent(limit)

    def grants(self, thread_id: str) -> list[StandingGrant]:
        """The thread's standing "always allow" grants in force, oldest first, each with
        who gave it, when and from where; the auto-approve switch is the grant "*"."""
        check_thread_id(thread_id)
        return grants_in_force(self.storage.decisions, thread_id)

    def revoke_grant(
        self, thread_id: str, grant: str, *, actor: str | None = None, source: str | None = None
    ) -> StandingGrant:
        """Withdraw a standing grant by its label ("write_file", "write_file:*.md", "*"),
        recorded in the decision log (who, when, from where); the thread's next model
        turn asks again. Raises ValueError, changing nothing, when no such grant is in force."""
        found = find_grant(self.grants(thread_id), grant)
        self.storage.decisions.record([revoke_record(self.storage.decisions, found, source=source or self.source,
                                                     actor=actor or self.actor)])
        return found

    def verify_audit(self) -> Any:
        """Check the decision log's hash chain (graph/store/decision_chain.py): a
        `ChainCheck` with `intact`, `entries`, `head` and `problems` (the first edited,
        inserted or deleted entry first)."""
        if self.storage.decisions is None:
            raise StorageError("this session has no decision log to verify")
        return self.storage.decisions.verify()

    # -- changing threads -----------------------------------------------------
    def rename(self, thread_id: str, title: str) -> None:
        check_thread_id(thread_id)
        self.storage.index.rename(thread_id, title.strip() or "Untitled")

    def delete(self, thread_id: str) -> None:
        check_thread_id(thread_id)
        self.storage.delete_thread(thread_id)

    def undo(self, thread_id: str, *, force: bool = False) -> int:
        """Drop the last user turn (and everything after it); returns how many messages
        left the thread. History stays in the checkpoints: this moves the thread head
        back. While the thread waits for a decision this would drop the pending
        request: refused with `AwaitingDecision` unless `force`."""
        with self._holding(thread_id):
            self._refuse_if_paused(thread_id, "undo", force)
            last = _last_human(self.messages(thread_id))
            return 0 if last is None else self._rewind(thread_id, last)

    def fork(
        self,
        thread_id: str,
        message_index: int,
        text: str,
        *,
        force: bool = False,
        callbacks: Sequence[BaseCallbackHandler] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        actor: str | None = None,
        auto_approve: bool | None = None,
    ) -> Run:
        """Replace the user message at `message_index` (of `messages` / `transcript`)
        with `text` and continue from there. Refused with `AwaitingDecision` while the
        thread waits for a decision, unless `force` (the request is dropped)."""
        if not text.strip():
            raise ValueError("a message cannot be empty")
        messages = self.messages(thread_id)
        if not (0 <= message_index < len(messages)) or not isinstance(messages[message_index], HumanMessage):
            raise ValueError(f"message {message_index} is not a user message of thread {thread_id}")
        options = RunOptions(callbacks, tags, metadata, source, actor, auto_approve)
        with self._leased(thread_id) as lease:
            self._refuse_if_paused(thread_id, "fork", force)
            self._rewind(thread_id, messages[message_index])
            self._follow_title(
                thread_id, first_user_text(messages), first_user_text([*messages[:message_index], HumanMessage(text)])
            )
            return self._send(thread_id, text, text, lease, options)

    def branches(self, thread_id: str, transcript: Sequence[MessageView] | None = None) -> list[Branches]:
        """The user messages of the thread's current branch that have other versions
        (after a fork, a regenerate, an undo and a new message), each with its versions
        oldest first (graph/service/branches.py). Pass the `transcript` when you have
        it, to spare reading it again. A thread that was never forked costs one query."""
        return self._tree.branches(thread_id, lambda: transcript if transcript is not None else self.transcript(thread_id))

    def switch_branch(self, thread_id: str, message_id: str, *, force: bool = False) -> None:
        """Move the thread onto the branch of another version of one of its user
        messages (`branches(...)[k].message_ids`), where that branch last ended a run.
        Refused with `AwaitingDecision` while the thread waits for a decision, unless
        `force` (the request is dropped; the branch stays in the checkpoints)."""
        with self._holding(thread_id):
            self._refuse_if_paused(thread_id, "switching branches", force)
            before = self.transcript(thread_id)
            if any(m.id == message_id for m in before):
                return  # already on it
            versions = self._tree.versions(thread_id, before).values()
            version = next((v for vs in versions for v in vs if v.message.id == message_id), None)
            if version is None:
                raise ValueError(f"message {message_id} is not a version of any message of thread {thread_id}")
            self.agent.update_state(self._tree.branch_end(thread_id, version), {"stop_reason": None}, as_node="finish")
            self.storage.index.touch(thread_id, status="idle")
            self._follow_title(thread_id, first_user(before), first_user(self.transcript(thread_id)))

    def _follow_title(self, thread_id: str, old: str | None, new: str | None) -> None:
        """A title taken from the first user message follows it to another version; a
        title the person gave stays."""
        info = self.storage.index.get(thread_id)
        if old is not None and new is not None and old != new and info is not None and info.title == title_of(old):
            self.storage.index.rename(thread_id, title_of(new))

    def _refuse_if_paused(self, thread_id: str, what: str, force: bool) -> None:
        if force or not self._may_be_paused(thread_id) or (pending := self.pending(thread_id)) is None:
            return
        waits = (
            f"{pending.call.name} (its outcome is unknown after a crash)" if isinstance(pending, OutcomeUnknown)
            else ", ".join(a.name for a in pending.actions)
        )
        raise AwaitingDecision(
            f"thread {thread_id} is waiting for a decision on {waits}; {what} would drop that request. "
            f"Decide it first, or {what} anyway (force=True; terminal: --force)"
        )

    def _rewind(self, thread_id: str, first_dropped: BaseMessage) -> int:
        """Move the thread head back to where it was before `first_dropped` arrived: the
        latest checkpoint without it that ended a run (or the thread's first). Found
        by message id, so a compaction in between (which renumbers the history) does
        not matter."""
        config = _config(thread_id)
        current = self.messages(thread_id)
        ancestors = self._tree.head_path(thread_id)
        for snapshot in self.agent.get_state_history(config):
            if snapshot.config["configurable"]["checkpoint_id"] not in ancestors:
                continue  # another branch's (the history lists every branch, newest first)
            msgs = (snapshot.values or {}).get("messages", [])
            if any(m.id == first_dropped.id for m in msgs) or (snapshot.next and snapshot.parent_config is not None):
                continue
            kept = {m.id for m in msgs}
            self.agent.update_state(snapshot.config, {"stop_reason": None}, as_node="finish")
            self.storage.index.touch(thread_id, status="idle")
            return sum(1 for m in current if m.id not in kept)
        raise ValueError(f"no checkpoint of thread {thread_id} before message {first_dropped.id}")

    def export(self, thread_id: str, fmt: str = "md") -> str:
        """The transcript as Markdown, or as JSON that `import_thread` reads back."""
        messages = self.messages(thread_id)
        info = self.thread(thread_id)
        title = info.title if info else thread_id
        if fmt == "json":
            outputs = self.storage.outputs.for_thread(thread_id) if self.storage.outputs is not None else {}
            return export_json(thread_id, title, messages, outputs, handover.carried(self.storage, thread_id, self.pending(thread_id)))
        if fmt != "md":
            raise ValueError(f"unknown export format {fmt!r}; use md or json")
        return export_markdown(thread_id, title, messages)

    def import_thread(self, data: str | bytes | Mapping[str, Any], *, thread_id: str | None = None) -> str:
        """Recreate a thread from `export(..., "json")` (text or parsed); returns its id.
        The messages come back equal (ids, tool calls and results, notices, reasoning),
        with outputs stored aside, the execution journal and the decision log. A thread
        exported while waiting for a decision waits again (the same request, a new
        interrupt id). The id is the exported one unless this database already has a
        thread by that id: then a new one. `thread_id` names it instead (refused when
        taken). Refused with `ImportRefused`, writing nothing, when the data is
        malformed, a tool call would lose its result, or the import could let a call
        run twice (graph/service/handover.py says when)."""
        exported = read_export(data)
        if thread_id is not None and self.exists(thread_id):
            raise ImportRefused(f"thread {thread_id} already exists; import under another id")
        # A malformed exported id is never used (nor looked up): the import gets a new one.
        usable = bool(exported.thread_id) and thread_id_problem(exported.thread_id) is None  # type: ignore[arg-type]
        taken = usable and self.exists(exported.thread_id)  # type: ignore[arg-type]
        if thread_id is None:
            thread_id = exported.thread_id if usable and not taken else None
            thread_id = thread_id or self.new_thread_id()
        journal, decisions = handover.journal_of(exported, thread_id), handover.decisions_of(exported, thread_id)
        with self._holding(thread_id):
            pause = handover.check(self.storage, thread_id, exported, journal, decisions, taken, self._tools())
            handover.restore(self.agent, self.storage, thread_id, exported, journal, decisions, pause)
            self.storage.index.touch(thread_id, status="idle" if pause is None else "awaiting_approval")
            # The export's title, whatever the saver guessed from the first message.
            self.storage.index.rename(thread_id, exported.title or "Imported thread")
        return thread_id

    def compact_now(self, thread_id: str) -> ev.Compacted | None:
        """Summarise the older part of a thread now (what the `Compaction` hook does past
        its threshold); None when nothing is old enough. Works with the default
        configuration, also when automatic compaction is off. Only between runs,
        never mid-approval. The checkpoints before keep the full history."""
        hooks = getattr(self.agent, "gatehouse_hooks", None)
        compaction = next((h for h in hooks or () if callable(getattr(h, "compact", None))), None)
        compaction = compaction or getattr(self.agent, "gatehouse_compaction", None)
        if compaction is None:
            raise ValueError("this agent has no Compaction hook (see docs/hooks.md)")
        with self._holding(thread_id):
            if self.pending(thread_id) is not None:
                raise AwaitingDecision(f"thread {thread_id} is waiting for a decision; answer it first")
            config = _config(thread_id)
            snapshot = self.agent.get_state(config)
            if snapshot.next:
                raise ValueError(f"thread {thread_id} has an unfinished run; retry or finish it first")
            planned = compaction.compact(snapshot.values or {}, force=True)
            if planned is None:
                return None
            update, counts = planned
            self.agent.update_state(config, update, as_node="finish")
            self.storage.index.touch(thread_id)
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
                    m for m in update.get("messages") or ()
                    if isinstance(m, AIMessage) and not m.additional_kwargs.get(NOTICE_MARK)
                ]
                if replies:
                    self.reply = replies[-1]


def options_dict(options: RunOptions | None) -> dict[str, Any]:
    """`options` as the keyword arguments of `send` / `resume` / `retry` / `fork`
    (not `dataclasses.asdict`: that would deep-copy callback handlers)."""
    options = options or RunOptions()
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


def wire_answer(answer: ReviewAnswer | OutcomeAnswer | Mapping[str, Any]) -> Any:
    """An answer as it travels in `Command(resume=...)`: the HITL wire form."""
    if isinstance(answer, ReviewAnswer | OutcomeAnswer):
        return answer.model_dump(mode="json", exclude_none=True)
    return answer


def _config(thread_id: str) -> dict[str, Any]:
    # Every read and write of a thread's checkpoints comes through here: a malformed
    # id (a NUL, control characters, 5,000 characters) is refused before it reaches storage.
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}


def _last_human(messages: list[BaseMessage]) -> BaseMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
