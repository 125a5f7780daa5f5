""" "Mark as resolved": a client that ends a pause without answering it (Agent Inbox's
`update_state(config, None, as_node=END)`, Agent Chat UI's `Command(goto=END)`) would
leave the gated calls unanswered. So a clear of a thread paused in `review` rejects
every open call with a note, recorded like any rejection (compiled.py, every client).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.constants import END
from langgraph.types import Command, StateSnapshot, StateUpdate

from gatehouse.graph.agent.authority import decide
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import updated_by, visiting
from gatehouse.graph.agent.tool_messages import RESOLVED_NOTE, rejected
from gatehouse.graph.protocol.answers import Reject
from gatehouse.graph.protocol.threads import TOOL_STATUS_KEY


def resolution(
    state: StateSnapshot, config: RunnableConfig, deps: AgentDeps
) -> list[list[StateUpdate]] | None:
    """The update a clear of `state` stands for: each open call of a paused review
    rejected through the door (`NotAllowed` for someone who may not); None if none."""
    calls = pending_review_calls(state)
    if not calls:
        return None
    rejection = Reject(type="reject", message=RESOLVED_NOTE)
    asked = next((i.id for i in state.interrupts), None)
    decide(
        deps,
        config,
        "review",
        [(call, rejection) for call in calls],
        request_id=asked,
        who=updated_by(config),
        visitor=visiting(),
    )
    messages = [rejected(call, RESOLVED_NOTE) for call in calls]
    for message in messages:
        message.additional_kwargs[TOOL_STATUS_KEY] = "rejected"
    return [[StateUpdate({"messages": messages}, "review")]]


def owner_only(supersteps: Sequence[Sequence[StateUpdate]]) -> None:
    """On LangGraph Server, a visitor (an approver) may resolve a pause, nothing more."""
    if visiting() and not is_clear(supersteps):
        raise PermissionError(
            "only the thread's owner changes its state; an approver may only decide (or resolve) "
            "the calls of their tools"
        )


def is_clear(supersteps: Sequence[Sequence[StateUpdate]]) -> bool:
    return [[tuple(update[:2]) for update in step] for step in supersteps] == [[(None, END)]]


def is_goto_end(input: Any) -> bool:
    """A run whose whole input is `Command(goto=END)` (Agent Chat UI's "Mark as Resolved")."""
    if not isinstance(input, Command) or input.resume is not None or input.update:
        return False
    goto = input.goto if isinstance(input.goto, list | tuple) else [input.goto]
    return bool(goto) and all(isinstance(g, str) and g == END for g in goto)


CLEAR: list[list[StateUpdate]] = [[StateUpdate(None, END)]]


def pending_review_calls(state: StateSnapshot) -> list[ToolCall]:
    if "review" not in (state.next or ()):
        return []
    return [
        ToolCall(name=a["name"], args=a["args"], id=a.get("tool_call_id"), type="tool_call")
        for pending in state.interrupts
        if isinstance(v := pending.value, Mapping) and isinstance(v.get("action_requests"), list)
        for a in v["action_requests"]
    ]
