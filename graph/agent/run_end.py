"""How a run ends: the `run_status` the ending node writes (the store keeps the thread
list current from it) with the `turn_complete` event, and how a run is stopped."""

from __future__ import annotations

from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.message_merge import message_index
from gatehouse.graph.protocol import events as ev

STOPPED_BY_PERSON = "Stopped by the person."


def stop(reason: str, kind: str) -> dict[str, Any]:
    """The update that stops the run; `kind`: "stopped", "cancelled" (the person), cut_off."""
    return {"stop_reason": reason, "stop_kind": kind}


def ended(status: Literal["completed", "stopped", "cancelled"], size: int) -> dict[str, Any]:
    """Announce the end of the run (`turn_complete`) and return its `run_status` mark."""
    emit(ev.TurnComplete, status=status, history_size=size)
    return {"run_status": status}


def ends_here(reply: AIMessage, update: dict[str, Any], has_on_exit: bool) -> bool:
    """Whether the model node's step with this reply ends the run (routing: END)."""
    return not (
        reply.tool_calls or reply.invalid_tool_calls or update.get("stop_reason") or has_on_exit
    )


def history_size(history: list[AnyMessage], added: list[Any]) -> int:
    """How many messages `history` holds once `added` is applied, without building it."""
    if any(isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES for m in added):
        return len(cast(list[Any], add_messages(cast(Any, history), added)))
    # The reducer's index (it applies this very update next): no set of every id.
    index = message_index(history)
    gone: set[str | None] = set()
    new: set[str | None] = set()
    size = len(history)
    for m in added:
        present = m.id in new or (m.id in index and m.id not in gone)
        if isinstance(m, RemoveMessage):
            if present:
                size -= 1
                new.discard(m.id)
                gone.add(m.id)
        elif m.id is None or not present:
            size += 1
            new.add(m.id)
    return size
