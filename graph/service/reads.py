"""The reads the Session's parts share: what a thread waits for, its messages and
transcript, the thread index and the decision log. Reads during a run of the same
Session agree with the events it has handed out (live_reads.py).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from gatehouse.graph.protocol.decisions import DecisionRecord
from gatehouse.graph.protocol.pauses import Approval, OutcomeUnknown, Pause, pause_from
from gatehouse.graph.protocol.threads import MessageView, ThreadInfo, check_thread_id
from gatehouse.graph.service.leasing import ThreadLeases
from gatehouse.graph.service.live_reads import LiveMessages
from gatehouse.graph.service.transcript import message_view
from gatehouse.graph.store.langgraph_private import INTERRUPT as INTERRUPT_CHANNEL
from gatehouse.graph.store.storage import Storage


def thread_config(thread_id: str) -> RunnableConfig:
    # Every checkpoint read and write comes here: a malformed id never reaches storage.
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}


def _fields(m: Any) -> tuple[type, dict[str, Any] | None]:
    fields = getattr(m, "__dict__", None)
    return type(m), None if fields is None else dict(fields)


def _same(known: tuple[type, dict[str, Any] | None], m: Any) -> bool:
    # A message without a `__dict__` (not a LangChain message) is never reused.
    return known[1] is not None and type(m) is known[0] and getattr(m, "__dict__", None) == known[1]


class ViewCache:
    """The last views of a few threads: converting a message costs far more than comparing
    its `__dict__`, so a read converts only messages from the first that changed on."""

    SIZE = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: OrderedDict[str, list[tuple[tuple[type, Any], MessageView]]] = OrderedDict()

    def views(self, thread_id: str, messages: Sequence[Any]) -> list[MessageView]:
        with self._lock:
            old = self._last.get(thread_id, [])
        same, most = 0, min(len(old), len(messages))
        while same < most and _same(old[same][0], messages[same]):
            same += 1
        pairs = old[:same] + [(_fields(m), message_view(m)) for m in messages[same:]]
        with self._lock:
            self._last[thread_id] = pairs
            self._last.move_to_end(thread_id)
            while len(self._last) > self.SIZE:
                self._last.popitem(last=False)
        return [view for _, view in pairs]


@dataclasses.dataclass
class ThreadReads:
    agent: CompiledStateGraph[Any, Any, Any, Any]
    storage: Storage
    leases: ThreadLeases
    live: LiveMessages  # the messages of runs going on now

    def __post_init__(self) -> None:
        self.views = ViewCache()  # what the last transcript read of each thread converted
        # With Gatehouse's own saver, its reader answers from the database (no `get_state`).
        own = self.agent.checkpointer is self.storage.checkpointer
        self.reader = self.storage.reader if own else None

    def pending(self, thread_id: str) -> Pause | None:
        """An approval first, else an outcome-unknown call."""
        check_thread_id(thread_id)
        if self.reader is not None:
            return self.reader.pending(thread_id)
        state = self.agent.get_state(thread_config(thread_id))
        pauses = [pause_from(thread_id, i.id, i.value) for i in state.interrupts]
        return next((p for p in pauses if isinstance(p, Approval)), None) or next(
            (p for p in pauses if isinstance(p, OutcomeUnknown)), None
        )

    def messages(self, thread_id: str) -> list[BaseMessage]:
        saved = list(
            (self.agent.get_state(thread_config(thread_id)).values or {}).get("messages", [])
        )
        return self.live.read(thread_id, saved)

    def transcript(self, thread_id: str) -> list[MessageView]:
        return self.views.views(thread_id, self.messages(thread_id))

    def thread(self, thread_id: str) -> ThreadInfo | None:
        info = self.storage.index.get(check_thread_id(thread_id))
        return None if info is None else self.live_status(info)

    def live_status(self, info: ThreadInfo) -> ThreadInfo:
        # A process killed mid-run leaves "running": without a live lease the run is gone.
        leases = self.storage.leases
        if (
            info.status == "running"
            and leases is not None
            and leases.holder(info.thread_id) is None
        ):
            return dataclasses.replace(info, status="interrupted")
        return info

    def exists(self, thread_id: str) -> bool:
        return self.thread(thread_id) is not None or bool(self.messages(thread_id))

    def audit(self, thread_id: str | None = None, limit: int = 200) -> list[DecisionRecord]:
        """The decision log, newest first: one thread's, or across threads."""
        decisions = self.storage.decisions
        if decisions is None:
            return []
        if thread_id is not None:  # only the last `limit`: a long thread has thousands
            return decisions.latest_for_thread(check_thread_id(thread_id), limit)
        return decisions.recent(limit)

    def was_asked(self, thread_id: str, interrupt_id: str, *, within: int = 400) -> bool:
        """Whether the thread paused with that id recently: read only to word a refusal."""
        history = self.agent.get_state_history(thread_config(thread_id), limit=within)
        return any(i.id == interrupt_id for snapshot in history for i in snapshot.interrupts)

    def may_be_paused(self, thread_id: str) -> bool:
        """False when the head checkpoint holds no interrupt (cheaper than `pending`)."""
        checkpointer = self.agent.checkpointer
        if not isinstance(checkpointer, BaseCheckpointSaver):
            return True  # no saver of its own to ask: `pending` reads the state
        saved = checkpointer.get_tuple(thread_config(thread_id))
        return saved is not None and any(
            channel == INTERRUPT_CHANNEL for _, channel, _ in saved.pending_writes or ()
        )
