"""The session API: the one thing front ends talk to (never LangGraph internals).

    session = Session.open(settings)          # or Session(graph, storage, tools)
    for event in session.send(None, "list files"): ...
    request = session.pending(thread_id)      # PendingApproval | None
    for event in session.resume(thread_id, {"decisions": [{"type": "approve"}]}): ...

`send`, `resume` and `retry` return a `Run`: an iterator of `graph.events.Event`
that drives the graph while it is iterated. Answers are validated before anything
runs (`DecisionError`), with the same rules the graph applies to a raw `Command`.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import ValidationError

from graph import events as ev
from graph.context import RunContext
from graph.hooks import HookError
from graph.journal import OutcomeAnswer, is_outcome_request
from graph.lease import Lease, RunInProgress
from graph.model_call import CUT_OFF_KEY, CUT_OFF_KIND
from graph.model_errors import describe_model_error
from graph.reasoning import reasoning_of
from graph.review import DecisionError, answering, explain
from graph.storage import Storage, StorageError, ThreadInfo
from graph.streaming import STREAM_MODES, text_of, translate

TITLE_CHARS = 60
# The channel of LangGraph's interrupt writes (private in langgraph.constants).
INTERRUPT_CHANNEL = "__interrupt__"


class NothingPending(DecisionError):
    """A decision was sent for a thread that is not waiting for one."""


class StaleDecision(DecisionError):
    """A decision names an approval request that is no longer the pending one."""


class AlreadyDecided(StaleDecision, RunInProgress):
    """Another run (a double click, another tab or process) is acting on this thread."""


@dataclass(frozen=True)
class PendingApproval:
    thread_id: str
    interrupt_id: str
    request: dict[str, Any]
    # "approval": a HITLRequest. "outcome_unknown": a call started before a crash and
    # its result was never recorded (graph/journal.py); answered with
    # {"type": "run_again" | "mark_failed" | "respond", "message": ...}.
    kind: str = "approval"

    @property
    def actions(self) -> list[dict[str, Any]]:
        return list(self.request.get("action_requests", []))

    def allowed(self, index: int) -> list[str]:
        if self.kind == "outcome_unknown":
            return list(self.request["allowed"])
        return list(self.request["review_configs"][index]["allowed_decisions"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "interrupt_id": self.interrupt_id,
            "request": self.request,
            "kind": self.kind,
        }


class Run:
    """Events of one run, produced while iterated; `status` is set at the end."""

    def __init__(self, thread_id: str, events: Iterator[ev.Event], cancel: threading.Event) -> None:
        self.thread_id = thread_id
        self.status: str | None = None
        self._events = events
        self._cancel = cancel

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


def is_storage_error(exc: BaseException) -> bool:
    """An error of the database driver (SQLite or Postgres), not of the model or a tool."""
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith(("psycopg", "psycopg_pool"))


def describe_error(exc: BaseException) -> tuple[str, str, bool]:
    """(message, kind, retryable) for an error a person should read, not a traceback."""
    name = type(exc).__name__
    module = type(exc).__module__
    if isinstance(exc, HookError):
        return str(exc), "hook", True
    if (model := describe_model_error(exc)) is not None:
        return model[0], "model", model[1]
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return f"The database is busy (locked by another process): {exc}", "storage", True
    if is_storage_error(exc) or (isinstance(exc, OSError) and not module.startswith(("openai", "httpx"))):
        return f"Storage error: {exc}", "storage", True
    if module.startswith(("openai", "httpx", "httpcore")):
        return f"The model API failed ({name}): {exc}", "model", True
    return f"{name}: {exc}", "error", True


class Session:
    def __init__(
        self,
        graph: CompiledStateGraph,
        storage: Storage,
        tools: Sequence[BaseTool],
        *,
        closers: Sequence[Any] = (),
        info: Mapping[str, Any] | None = None,
    ) -> None:
        self.graph = graph
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
        with self._leased(thread_id, "a run") as lease:
            if self._may_be_paused(thread_id) and self.pending(thread_id) is not None:
                raise DecisionError(
                    f"thread {thread_id} is waiting for a decision on a tool call; answer it first"
                )
            self.storage.index.touch(thread_id, title=_title(text), owner=owner)
            return self._run(thread_id, {"messages": [HumanMessage(text)]}, "message", lease)

    def resume(self, thread_id: str, answer: Any, *, interrupt_id: str | None = None) -> Run:
        """Answer the pending approval request: `{"decisions": [...]}` in request order
        (or keyed by tool call id). Raises `DecisionError` and changes nothing when the
        answer does not fit the request. When another run is already acting on the
        thread (a double click, two tabs, two processes) raises `AlreadyDecided`."""
        with self._leased(thread_id, "a decision on this approval request") as lease:
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
                if pending.kind == "outcome_unknown":
                    OutcomeAnswer.model_validate(answer)
                else:
                    with answering(pending.request, self.tools) as schema:
                        schema.model_validate(answer)
            except ValidationError as exc:
                raise DecisionError(explain(exc)) from None
            return self._run(thread_id, Command(resume={pending.interrupt_id: answer}), "resume", lease)

    def retry(self, thread_id: str) -> Run:
        """Continue a run that failed or whose process died, from its last checkpoint."""
        with self._leased(thread_id, "a run") as lease:
            return self._run(thread_id, self._retry_input(thread_id), "retry", lease)

    def _retry_input(self, thread_id: str) -> Any:
        """None continues from the last checkpoint. A run stopped by a cut-off reply has
        nothing left to continue: the model is asked again."""
        state = self.graph.get_state(_config(thread_id))
        if not state.next and (state.values or {}).get("stop_kind") == CUT_OFF_KIND:
            return Command(goto="model", update={"stop_run": None, "stop_kind": None})
        return None

    @contextmanager
    def _leased(self, thread_id: str, what: str) -> Iterator[Lease | None]:
        """The thread's run lease (graph/lease.py), released again if starting fails."""
        leases = self.storage.leases
        if leases is None:
            yield None
            return
        try:
            lease = leases.acquire(thread_id, what=what)
        except RunInProgress as exc:
            if what.startswith("a decision"):
                raise AlreadyDecided(f"{exc} (already decided / already running)") from None
            raise
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            message = _storage_message(exc, describe_error(exc)[0], self.storage.location)
            raise StorageError(f"cannot start a run on thread {thread_id}: {message}") from exc
        try:
            yield lease
        except BaseException:
            lease.release()
            raise

    def _run(self, thread_id: str, payload: Any, kind: str, lease: Lease | None = None) -> Run:
        cancel = threading.Event()
        return Run(thread_id, self._events(thread_id, payload, kind, cancel, lease), cancel)

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
                for mode, chunk in self.graph.stream(
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
                index.touch(thread_id, status=status, reason=reason)
                final = [*held, ev.RunFinished(thread_id=thread_id, status=status, reason=reason)]  # type: ignore[arg-type]
            except Exception as exc:
                message, error_kind, retryable = describe_error(exc)
                if error_kind == "storage":
                    message = _storage_message(exc, message, self.storage.location)
                # The storage that just failed may refuse this too; the error says why.
                with suppress(Exception):
                    index.touch(thread_id, status="failed", reason=message)
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
            state = self.graph.get_state(config)
            if state.interrupts:
                return "awaiting_approval", None
            values = state.values or {}
        if values.get("stop_run"):
            return ("cancelled" if values.get("stop_kind") == "cancelled" else "stopped"), values["stop_run"]
        return "completed", None

    def _may_be_paused(self, thread_id: str) -> bool:
        """False when the thread's head checkpoint holds no interrupt at all: a cheap
        read that spares most sends the full state read of `pending`."""
        saved = self.graph.checkpointer.get_tuple(_config(thread_id))  # type: ignore[union-attr]
        return saved is not None and any(channel == INTERRUPT_CHANNEL for _, channel, _ in saved.pending_writes or ())

    # -- reading threads ------------------------------------------------------
    def pending(self, thread_id: str) -> PendingApproval | None:
        state = self.graph.get_state(_config(thread_id))
        for interrupt in state.interrupts:
            if isinstance(interrupt.value, dict) and "action_requests" in interrupt.value:
                return PendingApproval(thread_id, interrupt.id, interrupt.value)
        for interrupt in state.interrupts:
            if is_outcome_request(interrupt.value):
                return PendingApproval(thread_id, interrupt.id, interrupt.value, kind="outcome_unknown")
        return None

    def messages(self, thread_id: str) -> list[BaseMessage]:
        return list((self.graph.get_state(_config(thread_id)).values or {}).get("messages", []))

    def usage(self, thread_id: str) -> dict[str, float]:
        return dict((self.graph.get_state(_config(thread_id)).values or {}).get("usage", {}))

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
        for snapshot in self.graph.get_state_history(config):
            msgs = (snapshot.values or {}).get("messages", [])
            # The checkpoint at the end of the earlier run: `keep` messages, nothing
            # next (for keep == 0: the thread's first, empty checkpoint).
            if len(msgs) == keep and (not snapshot.next or keep == 0):
                removed = len(self.messages(thread_id)) - keep
                self.graph.update_state(snapshot.config, {"stop_run": None}, as_node="finish")
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
            return json.dumps(
                {"thread_id": thread_id, "title": title, "messages": [message_dict(m) for m in messages]},
                indent=2,
                ensure_ascii=False,
            )
        if fmt != "md":
            raise ValueError(f"unknown export format {fmt!r}; use md or json")
        lines = [f"# {title}", "", f"Thread `{thread_id}`", ""]
        for m in messages:
            d = message_dict(m)
            lines.append(f"## {d['role']}" + (f" · {d['name']}" if d.get("name") else ""))
            if d.get("reasoning"):
                # Collapsed where Markdown renders HTML; never part of the answer text.
                lines += ["", "<details><summary>thinking</summary>", "", d["reasoning"], "", "</details>"]
            if d["content"]:
                lines += ["", d["content"]]
            if d.get("cut_off"):
                lines += ["", "*(cut off: the reply ended before it was finished)*"]
            for call in d.get("tool_calls", []):
                lines += ["", f"→ `{call['name']}` `{json.dumps(call['args'], ensure_ascii=False)}`"]
            lines.append("")
        return "\n".join(lines)

    def compact_now(self, thread_id: str) -> ev.Compacted | None:
        """Summarise the older part of a thread now, with the agent's `Compaction`
        hook; None when nothing is old enough. Only between runs, never mid-approval."""
        hooks = getattr(self.graph, "gatehouse_hooks", None)
        compaction = next((h for h in hooks or () if callable(getattr(h, "compact", None))), None)
        if compaction is None:
            raise ValueError("this agent has no Compaction hook (see docs/hooks.md)")
        if self.pending(thread_id) is not None:
            raise DecisionError(f"thread {thread_id} is waiting for a decision; answer it first")
        config = _config(thread_id)
        snapshot = self.graph.get_state(config)
        if snapshot.next:
            raise ValueError(f"thread {thread_id} has an unfinished run; retry or finish it first")
        planned = compaction.compact(snapshot.values or {}, force=True)
        if planned is None:
            return None
        update, counts = planned
        self.graph.update_state(config, update, as_node="finish")
        return ev.Compacted(thread_id=thread_id, **counts)

    def close(self) -> None:
        hooks = getattr(self.graph, "gatehouse_hooks", None)
        try:
            for close in self._closers:
                close()
            if hooks is not None:
                hooks.close()  # once, after the agent's last run (see graph.hooks)
        finally:
            self.storage.close()


class _StopSeen:
    """The last `stop_run` / `stop_kind` a run's nodes wrote, from its `updates`."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def see(self, chunk: Any) -> None:
        for update in chunk.values() if isinstance(chunk, dict) else ():
            if isinstance(update, dict):
                self.values.update({k: update[k] for k in ("stop_run", "stop_kind") if k in update})


def message_dict(m: BaseMessage) -> dict[str, Any]:
    """A plain, stable dict of a message for exports and JSON output."""
    role = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}.get(m.type, m.type)
    d: dict[str, Any] = {"role": role, "content": text_of(m.content), "id": m.id}
    if isinstance(m, AIMessage) and m.tool_calls:
        d["tool_calls"] = [{"id": c["id"], "name": c["name"], "args": c["args"]} for c in m.tool_calls]
    if isinstance(m, ToolMessage):
        d.update(tool_call_id=m.tool_call_id, name=m.name, status=m.status)
        # How the call ended (ok / error / rejected / denied / responded), and its duration.
        if "gatehouse_status" in m.additional_kwargs:
            d["tool_status"] = m.additional_kwargs["gatehouse_status"]
            d["duration_ms"] = m.additional_kwargs.get("gatehouse_duration_ms")
    if isinstance(m, AIMessage) and m.additional_kwargs.get("gatehouse_notice"):
        d["notice"] = True
    if isinstance(m, AIMessage) and (reasoning := reasoning_of(m.additional_kwargs, m.content)):
        d["reasoning"] = reasoning
    if isinstance(m, AIMessage) and m.additional_kwargs.get(CUT_OFF_KEY):
        d["cut_off"] = True
    return d


def _storage_message(exc: BaseException, message: str, location: str) -> str:
    text = str(exc).lower()
    if "full" in text or getattr(exc, "errno", None) == 28:  # SQLITE_FULL / ENOSPC
        return (
            f"The disk is full: could not write to the Gatehouse database {location}. "
            "Free some space and retry; the thread keeps everything up to its last saved step."
        )
    return f"{message} (database {location})"


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
