"""Reading threads: what a thread waits for, its messages and transcript, a tool
call's whole output, its usage, the thread index and the decision log. Nothing here
changes a thread. Reads during a run of the same Session agree with the events it
has handed out (graph/service/live_reads.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.agent.history import text_of
from graph.agent.offload import offloaded
from graph.protocol.decisions import DecisionRecord
from graph.protocol.errors import StorageError
from graph.protocol.pauses import Approval, OutcomeUnknown, Pause, pause_from
from graph.protocol.threads import MessageView, ThreadInfo, check_thread_id
from graph.service.leasing import ThreadLeases
from graph.service.live_reads import LiveMessages
from graph.service.view_cache import ViewCache
from graph.store.langgraph_private import INTERRUPT as INTERRUPT_CHANNEL
from graph.store.storage import Storage

__all__ = ["INTERRUPT_CHANNEL", "ThreadReads", "thread_config"]


def thread_config(thread_id: str) -> RunnableConfig:
    # Every read and write of a thread's checkpoints comes through here: a malformed
    # id (a NUL, control characters, 5,000 characters) is refused before it reaches storage.
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}


@dataclasses.dataclass
class ThreadReads:
    agent: CompiledStateGraph[Any, Any, Any, Any]
    storage: Storage
    leases: ThreadLeases
    live: LiveMessages  # the messages of runs going on now

    def __post_init__(self) -> None:
        self.views = ViewCache()  # what the last transcript read of each thread converted
        # Gatehouse's reader answers from the database directly when the graph uses
        # Gatehouse's own saver: no `get_state` rebuilding the thread's messages.
        own = self.agent.checkpointer is self.storage.checkpointer
        self.reader = self.storage.reader if own else None

    def pending(self, thread_id: str) -> Pause | None:
        """What the thread waits for: an approval first, else an outcome-unknown call."""
        check_thread_id(thread_id)
        if self.reader is not None:
            return self.reader.pending(thread_id)
        state = self.agent.get_state(thread_config(thread_id))
        pauses = [pause_from(thread_id, i.id, i.value) for i in state.interrupts]
        return next((p for p in pauses if isinstance(p, Approval)), None) or next(
            (p for p in pauses if isinstance(p, OutcomeUnknown)), None
        )

    def messages(self, thread_id: str) -> list[BaseMessage]:
        """The thread's messages as LangChain objects (for embedders and tests; front
        ends read `transcript`). Read during a run of this Session, they include every
        message whose event the run has handed out (graph/service/live_reads.py)."""
        saved = list(
            (self.agent.get_state(thread_config(thread_id)).values or {}).get("messages", [])
        )
        return self.live.read(thread_id, saved)

    def transcript(self, thread_id: str) -> list[MessageView]:
        """The thread's messages as plain data, for front ends. Only the messages that
        changed since this Session's last read of the thread are converted again
        (graph/service/view_cache.py): a page drawn after each turn of a long thread
        pays for the turn, not the thread."""
        return self.views.views(thread_id, self.messages(thread_id))

    def tool_output(self, thread_id: str, call_id: str) -> str | None:
        """The whole output of a tool call: the stored one when it was too large for the
        model's context (its result says `offloaded`), else the result in the thread.
        A call compacted out of the thread still has its stored output, if any. None
        when there is neither."""
        check_thread_id(thread_id)
        stored = (
            self.storage.outputs.get(thread_id, call_id)
            if self.storage.outputs is not None
            else None
        )
        result = next(
            (
                m
                for m in reversed(self.messages(thread_id))
                if getattr(m, "tool_call_id", None) == call_id
            ),
            None,
        )
        if result is None:
            return stored
        # A result that is not marked went into the context whole; a stored output
        # beside it belongs to an attempt that never finished (a crash).
        return stored if stored is not None and offloaded(result) else text_of(result.content)

    def usage(self, thread_id: str) -> dict[str, float]:
        if self.reader is not None:  # the web app's sidebar asks on every page run
            return self.reader.usage(check_thread_id(thread_id))
        return dict((self.agent.get_state(thread_config(thread_id)).values or {}).get("usage", {}))

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
        if (
            info.status == "running"
            and leases is not None
            and leases.holder(info.thread_id) is None
        ):
            return dataclasses.replace(info, status="interrupted")
        return info

    def awaiting_approval(self) -> list[ThreadInfo]:
        """Threads with a pause pending, oldest first (the approvals inbox): also after
        a resume failed or its process died; not while a live run is deciding it
        (`ThreadLeases.inbox`)."""
        return self.leases.inbox(self.storage.index.pending())

    def pending_many(self, thread_ids: list[str]) -> dict[str, Pause | None]:
        """`pending` of each thread, in one query for all where the reader can."""
        if self.reader is not None:
            return self.reader.pending_many([check_thread_id(t) for t in thread_ids])
        return {t: self.pending(t) for t in thread_ids}

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
            check_thread_id(thread_id)
            # Only the last `limit` records when the log can select them: the approval
            # card asks on each page run, and a long thread has thousands.
            latest = getattr(decisions, "latest_for_thread", None)
            if latest is not None:
                return list(latest(thread_id, limit))
            return list(reversed(decisions.for_thread(thread_id)))[:limit]
        return decisions.recent(limit)

    def verify_audit(self) -> Any:
        """Check the decision log's hash chain (graph/store/decision_chain.py): a
        `ChainCheck` with `intact`, `entries`, `head` and `problems` (the first edited,
        inserted or deleted entry first)."""
        if self.storage.decisions is None:
            raise StorageError("this session has no decision log to verify")
        return self.storage.decisions.verify()

    def was_asked(self, thread_id: str, interrupt_id: str, *, within: int = 400) -> bool:
        """Whether this thread paused with that interrupt id in its recent history (a
        stale tab's id) rather than never (a typo, another thread's id). Only read to
        word a refusal, so the walk's cost is paid on that path alone."""
        for snapshot in self.agent.get_state_history(thread_config(thread_id), limit=within):
            if any(i.id == interrupt_id for i in snapshot.interrupts):
                return True
        return False

    def may_be_paused(self, thread_id: str) -> bool:
        """False when the thread's head checkpoint holds no interrupt at all: a cheap
        read that spares most sends the full state read of `pending`."""
        checkpointer = self.agent.checkpointer
        if not isinstance(checkpointer, BaseCheckpointSaver):
            return True  # no saver of its own to ask: `pending` reads the state
        saved = checkpointer.get_tuple(thread_config(thread_id))
        return saved is not None and any(
            channel == INTERRUPT_CHANNEL for _, channel, _ in saved.pending_writes or ()
        )
