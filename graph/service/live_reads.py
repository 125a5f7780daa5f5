"""Reads during a run that agree with its events: LangGraph saves a step's messages
when the step ends, so an event announcing a message waits for its node's update, and
those updates are laid over the saved history on a read (more than the events said, never less).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from gatehouse.graph.protocol import events as ev


class LiveMessages:
    """Per thread: the message updates of its live run, in order, and its cancel switch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[list[list[Any]], threading.Event]] = {}

    def begin(self, thread_id: str, cancel: threading.Event) -> None:
        with self._lock:
            self._runs[thread_id] = ([], cancel)

    def end(self, thread_id: str) -> None:
        with self._lock:
            self._runs.pop(thread_id, None)

    def cancel(self, thread_id: str) -> bool:
        with self._lock:
            run = self._runs.get(thread_id)
        if run is not None:
            run[1].set()
        return run is not None

    def add(self, thread_id: str, messages: Sequence[Any]) -> None:
        with self._lock:
            if thread_id in self._runs:
                self._runs[thread_id][0].append(list(messages))

    def read(self, thread_id: str, saved: list[BaseMessage]) -> list[BaseMessage]:
        with self._lock:
            updates = [list(u) for u in self._runs.get(thread_id, ([], None))[0]]
        return functools.reduce(_lay_over, updates, list(saved)) if updates else saved


def _lay_over(messages: list[BaseMessage], update: list[Any]) -> list[BaseMessage]:
    """`add_messages` that tolerates an update already saved: missing ids are no error,
    and a rewrite (`REMOVE_ALL_MESSAGES` first) applies only when not there yet."""
    ids = {m.id for m in messages}
    for i, m in enumerate(update):
        if isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES:
            rest = [x for x in update[i + 1 :] if not isinstance(x, RemoveMessage)]
            if rest and all(x.id in ids for x in rest):
                continue  # saved already
            messages, ids = [], set()
        elif isinstance(m, RemoveMessage):
            messages = [x for x in messages if x.id != m.id]
            ids.discard(m.id)
        elif isinstance(m, BaseMessage):
            if m.id in ids:
                messages = [m if x.id == m.id else x for x in messages]
            else:
                messages.append(m)
                ids.add(m.id)
    return messages


class EventGate:
    """One run's events, each handed out once the message it announces is live."""

    def __init__(self, live: LiveMessages, thread_id: str) -> None:
        self.live = live
        self.thread_id = thread_id
        self._held: list[ev.Event] = []

    def event(self, event: ev.Event) -> list[ev.Event]:
        if isinstance(
            event, ev.ToolFinished | ev.AssistantMessage | ev.MessageReplaced | ev.TurnComplete
        ):
            self._held.append(event)  # held events keep their order among themselves
            return []
        return [event]

    def update(self, chunk: Any) -> list[ev.Event]:
        if not isinstance(chunk, dict):
            return []
        arrived: list[Any] = []
        for value in chunk.values():
            for update in value if isinstance(value, list | tuple) else [value]:
                if isinstance(update, dict) and update.get("messages"):
                    messages = update["messages"]
                    arrived += [messages] if isinstance(messages, BaseMessage) else list(messages)
        if arrived:
            self.live.add(self.thread_id, arrived)
        calls = {m.tool_call_id for m in arrived if isinstance(m, ToolMessage)}
        replies = {m.id for m in arrived if isinstance(m, AIMessage)}
        # Out go the held events before the first still waiting (they keep their order).
        waits = (i for i, e in enumerate(self._held) if _waits(e, calls, replies, bool(arrived)))
        first = next(waits, len(self._held))
        out, self._held = self._held[:first], self._held[first:]
        return out

    def rest(self) -> list[ev.Event]:
        held, self._held = self._held, []
        return held


def _waits(event: ev.Event, calls: set[str], replies: set[str | None], any_arrived: bool) -> bool:
    """Whether the update that just arrived is not yet the one `event` announces."""
    if isinstance(event, ev.ToolFinished):
        return event.call_id not in calls
    if isinstance(event, ev.AssistantMessage | ev.MessageReplaced):
        return event.message_id not in replies
    return not any_arrived  # turn_complete: the update of the node that ended the turn
