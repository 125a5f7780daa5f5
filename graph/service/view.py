"""The one door for reads: `Session.view(thread_id)` and `Session.thread_list()`. Each
field is read on first access and then kept (a caller pays only for what it reads): a
snapshot; take a new view to see later changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from langchain_core.messages import BaseMessage

from gatehouse.graph.agent.history import text_of
from gatehouse.graph.agent.offload import offloaded
from gatehouse.graph.protocol.decisions import DecisionRecord, StandingGrant
from gatehouse.graph.protocol.pauses import Pause
from gatehouse.graph.protocol.threads import Branches, MessageView, ThreadInfo, check_thread_id
from gatehouse.graph.service.history_edits import ThreadHistory
from gatehouse.graph.service.reads import ThreadReads, thread_config
from gatehouse.graph.service.standing import StandingPermissions


@dataclass(frozen=True, eq=False)
class ThreadView:
    """One thread as front ends read it, from the Session's parts."""

    thread_id: str
    reads: ThreadReads
    edits: ThreadHistory
    permissions: StandingPermissions

    @cached_property
    def info(self) -> ThreadInfo | None:  # None: not in the thread index
        return self.reads.thread(self.thread_id)

    @cached_property
    def exists(self) -> bool:
        return self.info is not None or bool(self.messages)

    @cached_property
    def pending(self) -> Pause | None:
        return self.reads.pending(self.thread_id)

    @cached_property
    def messages(self) -> list[BaseMessage]:
        return self.reads.messages(self.thread_id)

    @cached_property
    def transcript(self) -> list[MessageView]:
        return self.reads.transcript(self.thread_id)

    @cached_property
    def usage(self) -> dict[str, float]:
        reads = self.reads
        if reads.reader is not None:  # the web app's sidebar asks on every page run
            return reads.reader.usage(check_thread_id(self.thread_id))
        state = reads.agent.get_state(thread_config(self.thread_id))
        return dict((state.values or {}).get("usage", {}))

    @cached_property
    def branches(self) -> list[Branches]:
        # The transcript is read only when there are other versions.
        return self.edits.tree.branches(self.thread_id, lambda: self.transcript)

    @cached_property
    def grants(self) -> list[StandingGrant]:
        return self.permissions.grants(self.thread_id)

    @cached_property
    def auto_approve(self) -> bool:
        return self.permissions.thread_auto_approve(self.thread_id)

    @cached_property
    def auto_approving(self) -> str | None:
        """Why its calls would be auto-approved now: "thread", "session", or None."""
        if self.auto_approve:
            return "thread"
        return "session" if self.permissions.auto_approve else None

    def audit(self, limit: int = 200) -> list[DecisionRecord]:
        return self.reads.audit(self.thread_id, limit)

    def tool_output(self, call_id: str) -> str | None:
        """A call's whole output: stored aside when `offloaded`, else its result."""
        check_thread_id(self.thread_id)
        outputs = self.reads.storage.outputs
        stored = outputs.get(self.thread_id, call_id) if outputs is not None else None
        messages = reversed(self.reads.messages(self.thread_id))
        result = next((m for m in messages if getattr(m, "tool_call_id", None) == call_id), None)
        if result is None:
            return stored  # compacted out of the thread
        # Beside an unmarked result, a stored output is a crashed attempt's.
        return stored if stored is not None and offloaded(result) else text_of(result.content)

    def export(self, fmt: str = "md") -> str:
        return self.edits.export(self.thread_id, fmt)


@dataclass(frozen=True, eq=False)
class ThreadList:
    """The thread list and the approvals inbox."""

    reads: ThreadReads
    limit: int = 200

    @cached_property
    def threads(self) -> list[ThreadInfo]:
        return [self.reads.live_status(t) for t in self.reads.storage.index.list(limit=self.limit)]

    @cached_property
    def awaiting_approval(self) -> list[ThreadInfo]:
        """Threads with a pause pending, oldest first, but those a live run is deciding."""
        return self.reads.leases.inbox(self.reads.storage.index.pending())

    def pending_cards(self, limit: int | None = None) -> list[tuple[ThreadInfo, Pause]]:
        # The pauses in one query for all: `pending` of each is a query per card.
        waiting = self.awaiting_approval[:limit]
        pauses = self.pending_many([i.thread_id for i in waiting])
        return [(i, p) for i in waiting if (p := pauses.get(i.thread_id)) is not None]

    def pending_many(self, thread_ids: list[str]) -> dict[str, Pause | None]:
        """`pending` of each thread, in one query where the reader can."""
        if (reader := self.reads.reader) is not None:
            return reader.pending_many([check_thread_id(t) for t in thread_ids])
        return {t: self.reads.pending(t) for t in thread_ids}

    def audit(self, limit: int = 200) -> list[DecisionRecord]:
        return self.reads.audit(None, limit)
