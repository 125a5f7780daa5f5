"""Changing a thread's history between runs, each change under the thread's lease. Undo
and fork start a new checkpoint from an older one (branches.py reads that tree); a change
that would drop a pending request is refused with `AwaitingDecision` unless forced.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from gatehouse.graph.agent.compiled import parts_of
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import AwaitingDecision, ImportRefused
from gatehouse.graph.protocol.pauses import OutcomeUnknown
from gatehouse.graph.protocol.threads import check_thread_id, thread_id_problem
from gatehouse.graph.service import handover
from gatehouse.graph.service.branches import ThreadTree, first_user, forked
from gatehouse.graph.service.leasing import ThreadLeases
from gatehouse.graph.service.reads import ThreadReads, thread_config
from gatehouse.graph.service.transcript import export_json, export_markdown, read_export
from gatehouse.graph.store.storage import Storage
from gatehouse.graph.store.threads import first_user_text, title_of


def new_thread_id() -> str:
    # Dashed, as LangGraph Server requires: a thread started here opens in Studio.
    return str(uuid.uuid4())


@dataclass
class ThreadHistory:
    agent: CompiledStateGraph[Any, Any, Any, Any]
    storage: Storage
    reads: ThreadReads
    leases: ThreadLeases
    tools: Mapping[str, BaseTool]  # the compiled agent's, by name

    def __post_init__(self) -> None:
        self.tree = ThreadTree(self.agent, self.reads.reader)

    def rename(self, thread_id: str, title: str) -> None:
        self.storage.index.rename(check_thread_id(thread_id), title.strip() or "Untitled")

    def delete(self, thread_id: str) -> None:
        with self.leases.leased(thread_id, run=False):  # not under a live run: `RunInProgress`
            self.storage.delete_thread(thread_id)

    def undo(self, thread_id: str, force: bool = False) -> int:
        """Move the head back to before the last user turn; how many messages left."""
        with self.leases.leased(thread_id, run=False):
            self._refuse_if_paused(thread_id, "undo", force)
            messages = reversed(self.reads.messages(thread_id))
            last = next((m for m in messages if isinstance(m, HumanMessage)), None)
            return 0 if last is None else self._rewind(thread_id, last)

    def fork_point(self, thread_id: str, message_index: int, text: str) -> list[BaseMessage]:
        """The thread's messages, checked (before the lease) that the fork may be made."""
        if not text.strip():
            raise ValueError("a message cannot be empty")
        messages = self.reads.messages(thread_id)
        if not (0 <= message_index < len(messages)) or not isinstance(
            messages[message_index], HumanMessage
        ):
            raise ValueError(f"message {message_index} is not a user message of thread {thread_id}")
        return messages

    def branch_off(
        self,
        thread_id: str,
        messages: list[BaseMessage],
        message_index: int,
        text: str,
        force: bool,
    ) -> None:
        """Under the fork run's lease: the head back to before message `message_index`."""
        self._refuse_if_paused(thread_id, "fork", force)
        self._rewind(thread_id, messages[message_index])
        self._follow_title(
            thread_id,
            first_user_text(messages),
            first_user_text([*messages[:message_index], HumanMessage(text)]),
        )

    def switch_branch(self, thread_id: str, message_id: str, force: bool = False) -> bool:
        """Move the thread onto the branch of another version of one of its user messages."""
        with self.leases.leased(thread_id, run=False):
            self._refuse_if_paused(thread_id, "switching branches", force)
            before = self.reads.transcript(thread_id)
            if any(m.id == message_id for m in before):
                return False  # already on it
            edges = self.tree.edges(thread_id)
            versions = (
                self.tree.versions(thread_id, before, edges).values() if forked(edges) else ()
            )
            version = next((v for vs in versions for v in vs if v.message.id == message_id), None)
            if version is None:
                raise ValueError(
                    f"message {message_id} is not a version of any message of thread {thread_id}"
                )
            end = self.tree.branch_end(thread_id, version)
            self.agent.update_state(end, {"stop_reason": None}, as_node="finish")
            self.storage.index.touch(thread_id, status="idle")
            self._follow_title(
                thread_id, first_user(before), first_user(self.reads.transcript(thread_id))
            )
        return True

    def _follow_title(self, thread_id: str, old: str | None, new: str | None) -> None:
        # A title taken from the first user message follows it; one the person gave stays.
        if old is None or new is None or old == new:
            return
        info = self.storage.index.get(thread_id)
        if info is not None and info.title == title_of(old):
            self.storage.index.rename(thread_id, title_of(new))

    def _refuse_if_paused(self, thread_id: str, what: str, force: bool) -> None:
        if (
            force
            or not self.reads.may_be_paused(thread_id)
            or (pending := self.reads.pending(thread_id)) is None
        ):
            return
        waits = (
            f"{pending.call.name} (its outcome is unknown after a crash)"
            if isinstance(pending, OutcomeUnknown)
            else ", ".join(a.name for a in pending.actions)
        )
        raise AwaitingDecision(
            f"thread {thread_id} is waiting for a decision on {waits}; {what} would drop that request. "
            f"Decide it first, or {what} anyway (force=True; terminal: --force)"
        )

    def _rewind(self, thread_id: str, first_dropped: BaseMessage) -> int:
        """The head back to the latest run end without `first_dropped` (by id: compaction-proof)."""
        current = self.reads.messages(thread_id)
        ancestors = self.tree.head_path(thread_id)
        for snapshot in self.agent.get_state_history(thread_config(thread_id)):
            if snapshot.config["configurable"]["checkpoint_id"] not in ancestors:
                continue  # another branch's (the history lists every branch, newest first)
            msgs = (snapshot.values or {}).get("messages", [])
            if any(m.id == first_dropped.id for m in msgs) or (
                snapshot.next and snapshot.parent_config is not None
            ):
                continue
            kept = {m.id for m in msgs}
            self.agent.update_state(snapshot.config, {"stop_reason": None}, as_node="finish")
            self.storage.index.touch(thread_id, status="idle")
            return sum(1 for m in current if m.id not in kept)
        raise ValueError(f"no checkpoint of thread {thread_id} before message {first_dropped.id}")

    def export(self, thread_id: str, fmt: str = "md") -> str:
        """The transcript as Markdown, or as JSON that `import_thread` reads back."""
        messages = self.reads.messages(thread_id)
        info = self.reads.thread(thread_id)
        title = info.title if info else thread_id
        if fmt == "json":
            stored = self.storage.outputs
            outputs = stored.for_thread(thread_id) if stored is not None else {}
            carried = handover.carried(self.storage, thread_id, self.reads.pending(thread_id))
            return export_json(thread_id, title, messages, outputs, carried)
        if fmt != "md":
            raise ValueError(f"unknown export format {fmt!r}; use md or json")
        return export_markdown(thread_id, title, messages)

    def import_thread(
        self, data: str | bytes | Mapping[str, Any], thread_id: str | None = None
    ) -> handover.Imported:
        """The thread back (handover.py), under `thread_id`, else its own unless taken."""
        exported = read_export(data)
        if thread_id is not None and self.reads.exists(thread_id):
            raise ImportRefused(f"thread {thread_id} already exists; import under another id")
        # A malformed exported id is never used (nor looked up): the import gets a new one.
        exported_id = exported.thread_id
        if exported_id is not None and thread_id_problem(exported_id) is not None:
            exported_id = None
        taken = exported_id is not None and self.reads.exists(exported_id)
        if thread_id is None:
            thread_id = (exported_id if not taken else None) or new_thread_id()
        journal = handover.journal_of(exported, thread_id)
        decisions, imported = handover.decisions_of(exported, thread_id)
        with self.leases.leased(thread_id, run=False):
            pause = handover.check(
                self.storage, thread_id, exported, journal, decisions, taken, self.tools
            )
            handover.restore(
                self.agent, self.storage, thread_id, exported, journal, decisions, pause
            )
            self.storage.index.touch(
                thread_id, status="idle" if pause is None else "awaiting_approval"
            )
            # The export's title, whatever the saver guessed from the first message.
            self.storage.index.rename(thread_id, exported.title or "Imported thread")
        return imported

    def compact(self, thread_id: str) -> ev.Compacted | None:
        """What the `Compaction` hook does past its threshold, now; None: nothing to do."""
        parts = parts_of(self.agent)
        hooks = parts.hooks if parts is not None else ()
        compaction = next((h for h in hooks if callable(getattr(h, "compact", None))), None)
        compaction = compaction or (parts.compaction if parts is not None else None)
        if compaction is None:
            raise ValueError("this agent has no Compaction hook (see docs/hooks.md)")
        with self.leases.leased(thread_id, run=False):
            if self.reads.pending(thread_id) is not None:
                raise AwaitingDecision(
                    f"thread {thread_id} is waiting for a decision; answer it first"
                )
            config = thread_config(thread_id)
            snapshot = self.agent.get_state(config)
            if snapshot.next:
                raise ValueError(
                    f"thread {thread_id} has an unfinished run; retry or finish it first"
                )
            planned = compaction.compact(snapshot.values or {}, force=True)
            if planned is None:
                return None
            update, counts = planned
            self.agent.update_state(config, update, as_node="finish")
            self.storage.index.touch(thread_id)
        return ev.Compacted(thread_id=thread_id, **counts)
