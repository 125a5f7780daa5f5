"""The one door for reads: `Session.view(thread_id)` and `Session.thread_list()`.

Each field is read on first access and then kept: a caller that needs only `pending`
pays only for it. A view is a snapshot of what it has read; take a new one to see
later changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from langchain_core.messages import BaseMessage

from graph.protocol.decisions import DecisionRecord, StandingGrant
from graph.protocol.pauses import Pause
from graph.protocol.threads import Branches, MessageView, ThreadInfo
from graph.service.history_edits import ThreadHistory
from graph.service.reads import ThreadReads
from graph.service.standing import StandingPermissions

__all__ = ["ThreadList", "ThreadView"]


@dataclass(frozen=True, eq=False)
class ThreadView:
    """One thread as front ends read it; each member is its part's read of the thread
    (reads.py, standing.py, branches.py, history_edits.py)."""

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
        return self.reads.usage(self.thread_id)

    @cached_property
    def branches(self) -> list[Branches]:
        # The user messages of its branch with other versions (after a fork, a
        # regenerate, an undo): the transcript is read only when there are some.
        return self.edits.tree.branches(self.thread_id, lambda: self.transcript)

    @cached_property
    def grants(self) -> list[StandingGrant]:
        """Its standing "always allow" grants in force, oldest first."""
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
        return self.reads.tool_output(self.thread_id, call_id)

    def export(self, fmt: str = "md") -> str:
        return self.edits.export(self.thread_id, fmt)


@dataclass(frozen=True, eq=False)
class ThreadList:
    """The thread list and the approvals inbox."""

    reads: ThreadReads
    limit: int = 200

    @cached_property
    def threads(self) -> list[ThreadInfo]:
        return self.reads.threads(self.limit)

    @cached_property
    def awaiting_approval(self) -> list[ThreadInfo]:
        return self.reads.awaiting_approval()

    def pending_cards(self, limit: int | None = None) -> list[tuple[ThreadInfo, Pause]]:
        # The pauses in one query for all: `pending` of each is a query per card.
        waiting = self.awaiting_approval[:limit]
        pauses = self.pending_many([i.thread_id for i in waiting])
        return [(i, p) for i in waiting if (p := pauses.get(i.thread_id)) is not None]

    def pending_many(self, thread_ids: list[str]) -> dict[str, Pause | None]:
        return self.reads.pending_many(thread_ids)

    def audit(self, limit: int = 200) -> list[DecisionRecord]:
        return self.reads.audit(None, limit)
