"""The session API front ends talk to: `submit(operation)` for every change (a `Run`;
one that starts none yields only `Done`), `view` / `thread_list` for reads. Answers are
checked by the graph's own rules before anything runs: convenience, not safety.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Unpack, assert_never

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

from gatehouse.graph.agent.authority import deciding
from gatehouse.graph.agent.compiled import parts_of
from gatehouse.graph.agent.history import text_of
from gatehouse.graph.agent.model_call import CUT_OFF_KIND
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.agent.review import answering, args_problem, explain
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.answers import OutcomeAnswer, ReviewAnswer
from gatehouse.graph.protocol.decisions import who_decided
from gatehouse.graph.protocol.errors import (
    AwaitingDecision,
    DecisionError,
    NothingPending,
    StaleDecision,
    StorageError,
)
from gatehouse.graph.protocol.operations import (
    Cancel,
    Change,
    Compact,
    Decide,
    Delete,
    Fork,
    Grant,
    ImportThread,
    Operation,
    Rename,
    Retry,
    Revoke,
    RunOptions,
    RunOptionsKwargs,
    SendMessage,
    SetAutoApprove,
    SwitchBranch,
    Undo,
)
from gatehouse.graph.protocol.pauses import OutcomeUnknown
from gatehouse.graph.protocol.tools import spec_of
from gatehouse.graph.service.history_edits import ThreadHistory, new_thread_id
from gatehouse.graph.service.leasing import ThreadLeases
from gatehouse.graph.service.live_reads import LiveMessages
from gatehouse.graph.service.reads import ThreadReads, thread_config
from gatehouse.graph.service.run import Run, drive
from gatehouse.graph.service.standing import StandingPermissions
from gatehouse.graph.service.view import ThreadList, ThreadView
from gatehouse.graph.store.leases import Lease
from gatehouse.graph.store.storage import Storage
from gatehouse.graph.store.threads import Start, title_of


class Session:
    """A Gatehouse agent with its storage, for front ends."""

    def __init__(
        self,
        agent: CompiledStateGraph[Any, Any, Any, Any],
        storage: Storage,
        tools: Sequence[BaseTool],
        *,
        closers: Sequence[Any] = (),
        info: Mapping[str, Any] | None = None,
        source: str | None = None,
        actor: str | None = None,
        auto_approve: bool = False,
    ) -> None:
        """`source` and `actor`: what the decision log records unless a call says."""
        self.agent = agent
        self.storage = storage
        self.tools = {t.name: t for t in tools}
        self.info = dict(info or {})
        self.source = source or "api"
        self.actor = actor
        self._closers = list(closers)
        self._live = LiveMessages()
        self.leases = ThreadLeases(storage, self.retry)
        self.reads = ThreadReads(agent, storage, self.leases, self._live)
        parts = parts_of(agent)
        # The compiled agent's own (the built-in read_tool_output included) when known.
        self.agent_tools: Mapping[str, BaseTool] = parts.tools if parts is not None else self.tools
        self.permissions = StandingPermissions(agent, storage, auto_approve)
        self.edits = ThreadHistory(agent, storage, self.reads, self.leases, self.agent_tools)

    new_thread_id = staticmethod(new_thread_id)

    def view(self, thread_id: str) -> ThreadView:
        return ThreadView(thread_id, self.reads, self.edits, self.permissions)

    def thread_list(self, limit: int = 200) -> ThreadList:
        return ThreadList(self.reads, limit)

    def verify_audit(self) -> Any:
        """Check the decision log's hash chain: a `ChainCheck` (graph/store/decision_chain.py)."""
        if self.storage.decisions is None:
            raise StorageError("this session has no decision log to verify")
        return self.storage.decisions.verify()

    def check_args(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """Why `args` would not pass the tool's schema, or None."""
        tool = self.agent_tools.get(tool_name)
        return f"no tool named {tool_name!r}" if tool is None else args_problem(tool, args)

    def tool_summary(self, tool_name: str) -> str:
        """The first line of the tool's description, or "" for an unknown tool."""
        tool = self.agent_tools.get(tool_name)
        return (tool.description or "").strip().split("\n", 1)[0] if tool is not None else ""

    def preview(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """The tool's preview of a call (e.g. a diff); None when it has none or it fails."""
        tool = self.agent_tools.get(tool_name)
        render = spec_of(tool).preview if tool is not None else None
        try:
            return None if render is None else render(dict(args))
        except Exception:  # noqa: BLE001 - a preview is a courtesy, never an error
            return None

    @property
    def auto_approve(self) -> bool:
        return self.permissions.auto_approve

    def submit(self, operation: Operation, options: RunOptions | None = None) -> Run:
        """Start `operation`'s run, or make the change; refusals raise before any change."""
        options = options or RunOptions()
        match operation:
            case SendMessage():
                return self._send_message(operation, options)
            case Decide(thread_id, answer, interrupt_id):
                return self._decide(thread_id, wire_answer(answer), interrupt_id, options)
            case Retry(thread_id):
                with self.leases.leased(thread_id, start=Start(thread_id)) as lease:
                    return self._run(
                        thread_id, self._retry_input(thread_id), "retry", lease, options
                    )
            case Fork():
                return self._fork(operation, options)
            case _:
                done = self._change(
                    operation, options.source or self.source, options.actor or self.actor
                )
                return Run(done.thread_id, iter([done]), kind=operation.type)

    def _change(self, op: Change, source: str, actor: str | None) -> ev.Done:
        done = functools.partial(
            ev.Done, thread_id=getattr(op, "thread_id", None) or "", operation=op.type
        )
        who: dict[str, Any] = {"source": source, "actor": actor}
        match op:
            case Cancel(thread_id):
                return done(changed=self._live.cancel(thread_id))
            case Undo(thread_id, force):
                return done(removed=self.edits.undo(thread_id, force))
            case Compact(thread_id):
                compacted = self.edits.compact(thread_id)
                return done(changed=compacted is not None, compacted=compacted)
            case Rename(thread_id, title):
                self.edits.rename(thread_id, title)
            case Delete(thread_id):
                self.edits.delete(thread_id)
            case SwitchBranch(thread_id, message_id, force):
                return done(changed=self.edits.switch_branch(thread_id, message_id, force))
            case Grant(thread_id, tool, pattern):
                return done(grant=self.permissions.grant(thread_id, tool, pattern, **who))
            case Revoke(thread_id, grant):
                return done(grant=self.permissions.revoke(thread_id, grant, **who))
            case SetAutoApprove(thread_id, on):
                if thread_id is None:
                    self.permissions.set_auto_approve(on)
                else:
                    switch = self.permissions.set_thread_auto_approve
                    return done(changed=switch(thread_id, on, **who))
            case ImportThread(data, thread_id):
                imported = self.edits.import_thread(data, thread_id)
                return done(thread_id=str(imported), dropped=imported.dropped)
            case _:
                assert_never(op)
        return done()

    def _send_message(self, op: SendMessage, options: RunOptions) -> Run:
        text = text_of(op.message)
        if not text.strip():
            raise ValueError("a message cannot be empty")
        thread_id = op.thread_id or self.new_thread_id()
        start = Start(thread_id, title_of(text), op.owner)
        with self.leases.leased(thread_id, start=start) as lease:
            if self._may_be_paused(thread_id, lease) and self.reads.pending(thread_id) is not None:
                raise AwaitingDecision(
                    f"thread {thread_id} is waiting for a decision on a tool call; answer it first"
                )
            return self._send(thread_id, op.message, lease, options, op.owner)

    def _may_be_paused(self, thread_id: str, lease: Lease | None) -> bool:
        """Whether the thread may hold a pause: the index read with the lease's take says,
        where Gatehouse's saver writes it with the checkpoints (an interrupt's writes and
        the index row in one transaction), else the head checkpoint (a read)."""
        checkpointer = self.agent.checkpointer
        if (
            lease is not None
            and lease.index_paused is not None
            and getattr(checkpointer, "side_tables", False)
            and checkpointer is self.storage.checkpointer
        ):
            return lease.index_paused
        return self.reads.may_be_paused(thread_id)

    def _send(
        self, thread_id: str, message: Any, lease: Lease | None, options: RunOptions, owner: Any
    ) -> Run:
        # The row before the run is iterated: a front end shows the new thread at once,
        # running (one statement, not one here and the run's own).
        text = text_of(message)
        if lease is None or lease.undo is None:  # else written with the lease's take
            self.storage.index.touch(thread_id, title=title_of(text), owner=owner, status="running")
        payload = {"messages": [HumanMessage(message)]}
        return self._run(
            thread_id, payload, "message", lease, options, user_text=text, running=True
        )

    def _decide(
        self, thread_id: str, answer: Any, interrupt_id: str | None, options: RunOptions
    ) -> Run:
        with self.leases.leased(thread_id, deciding=True, start=Start(thread_id)) as lease:
            # Checked under the lease: a run that decided it a moment ago has finished.
            pending = self.reads.pending(thread_id)
            if pending is None:
                done = who_decided(self.reads.audit(thread_id, limit=50))
                raise NothingPending(
                    f"thread {thread_id} is not waiting for a decision"
                    + (f": it was already decided ({done})" if done else "")
                )
            if interrupt_id is not None and interrupt_id != pending.interrupt_id:
                if self.reads.was_asked(thread_id, interrupt_id):
                    done = who_decided(self.reads.audit(thread_id, limit=50))
                    raise StaleDecision(
                        f"approval request {interrupt_id} is no longer pending on thread {thread_id} "
                        f"(it was already decided{': ' + done if done else ''}); reload to see the current request"
                    )
                raise StaleDecision(
                    f"thread {thread_id} never asked approval request {interrupt_id}; the pending one is "
                    f"{pending.interrupt_id} (see `pending --json`)"
                )
            actor, parts = options.actor or self.actor, parts_of(self.agent)
            checking: AbstractContextManager[type[BaseModel]] = (
                deciding(actor, pending.call.name, parts.policy if parts is not None else Policy())
                if isinstance(pending, OutcomeUnknown)
                else answering(pending.request.wire(), self.agent_tools, actor=actor)
            )
            try:
                with checking as schema:
                    schema.model_validate(answer)
            except ValidationError as exc:
                raise DecisionError(explain(exc)) from None
            return self._run(
                thread_id, Command(resume={pending.interrupt_id: answer}), "resume", lease, options
            )

    def _retry_input(self, thread_id: str) -> Any:
        """None continues; a cut-off reply, or one cut off after the user's message, asks again."""
        state = self.agent.get_state(thread_config(thread_id))
        values = state.values or {}
        if state.next:
            return None
        if values.get("stop_kind") == CUT_OFF_KIND:
            return Command(goto="model", update={"stop_reason": None, "stop_kind": None})
        last = (values.get("messages") or [None])[-1]
        return Command(goto="model") if getattr(last, "type", "") == "human" else None

    def _fork(self, op: Fork, options: RunOptions) -> Run:
        messages = self.edits.fork_point(op.thread_id, op.message_index, op.text)
        with self.leases.leased(op.thread_id) as lease:
            self.edits.branch_off(op.thread_id, messages, op.message_index, op.text, op.force)
            return self._send(op.thread_id, op.text, lease, options, None)

    def _run(
        self,
        thread_id: str,
        payload: Any,
        kind: str,
        lease: Lease | None,
        options: RunOptions,
        *,
        user_text: str | None = None,
        running: bool = False,
    ) -> Run:
        cancel = threading.Event()
        # Unset: the session's switch, live; else this run's own.
        auto = self.permissions.switch if options.auto_approve is None else threading.Event()
        if options.auto_approve:
            auto.set()
        events = drive(
            self.reads,
            thread_id,
            payload,
            kind=kind,
            cancel=cancel,
            config=self._run_config(thread_id, options),
            lease=lease,
            auto_approve=auto,
            # Marked running already: by `_send`, or with the lease's take.
            running=running or (lease is not None and lease.undo is not None),
        )
        return Run(thread_id, events, cancel, kind=kind, user_text=user_text)

    def _run_config(self, thread_id: str, options: RunOptions) -> RunnableConfig:
        """Who acts, for the decision log; LangSmith groups runs by `metadata["thread_id"]`."""
        configurable: dict[str, Any] = {
            "thread_id": thread_id,
            "gatehouse_source": options.source or self.source,
        }
        if actor := options.actor or self.actor:
            configurable["gatehouse_actor"] = actor
        config: RunnableConfig = {
            "configurable": configurable,
            "metadata": {**(options.metadata or {}), "thread_id": thread_id},
        }
        if options.callbacks:
            config["callbacks"] = list(options.callbacks)
        if options.tags:
            config["tags"] = list(options.tags)
        return config

    def send(
        self,
        thread_id: str | None,
        message: str | list[Any],
        *,
        owner: str | None = None,
        **options: Unpack[RunOptionsKwargs],
    ) -> Run:
        """`submit(SendMessage(...))`, with the run options as keyword arguments."""
        return self.submit(SendMessage(thread_id, message, owner), RunOptions(**options))

    def resume(
        self,
        thread_id: str,
        answer: ReviewAnswer | OutcomeAnswer | Mapping[str, Any],
        *,
        interrupt_id: str | None = None,
        reject_missing: bool | str = False,
        **options: Unpack[RunOptionsKwargs],
    ) -> Run:
        """`submit(Decide(...))`; `reject_missing`: calls left undecided are rejected."""
        wire = wire_answer(answer)  # a typed answer or a raw dict: checked alike
        if reject_missing is not False and not isinstance(answer, OutcomeAnswer):
            wire = {**wire, "reject_missing": reject_missing}
        return self._decide(thread_id, wire, interrupt_id, RunOptions(**options))

    def retry(self, thread_id: str, **options: Unpack[RunOptionsKwargs]) -> Run:
        """`submit(Retry(...))`."""
        return self.submit(Retry(thread_id), RunOptions(**options))

    def fork(
        self,
        thread_id: str,
        message_index: int,
        text: str,
        *,
        force: bool = False,
        **options: Unpack[RunOptionsKwargs],
    ) -> Run:
        """`submit(Fork(...))`: `message_index` counts `messages` / `transcript`."""
        return self.submit(Fork(thread_id, message_index, text, force), RunOptions(**options))

    def close(self) -> None:
        parts = parts_of(self.agent)
        try:
            for close in self._closers:
                close()
            if parts is not None:
                parts.hooks.close()  # once, after the agent's last run (graph/agent/hooks.py)
        finally:
            self.storage.close()


def wire_answer(answer: ReviewAnswer | OutcomeAnswer | Mapping[str, Any]) -> Any:
    """A typed answer in the HITL wire form; a raw client's dict passes as it is."""
    if isinstance(answer, ReviewAnswer | OutcomeAnswer):
        return answer.model_dump(mode="json", exclude_none=True)
    return answer
