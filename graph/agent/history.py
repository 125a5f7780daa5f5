"""Reading the conversation: the latest turn's open calls, the last user message, and
the text of message content (a string or a list of content blocks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)

from gatehouse.graph.agent.prefix_memo import PrefixMemo
from gatehouse.graph.protocol.threads import SUMMARY_MARK, content_text

# The text of message content (a string, or a list of content blocks).
text_of = content_text


def is_summary(message: BaseMessage) -> bool:
    """A compaction summary: the model's stand-in for the messages before it."""
    return bool(message.additional_kwargs.get(SUMMARY_MARK))


def model_view(messages: Sequence[AnyMessage]) -> Sequence[AnyMessage]:
    """What the model is sent: from the latest compaction summary on."""
    start = view_start(messages)
    return messages[start:] if start else messages


def view_start(messages: Sequence[AnyMessage]) -> int:
    """The position of the latest compaction summary (0: none)."""
    return _view_starts(messages)[1]


def _view_start_after(seen_and_start: tuple[int, int], more: Sequence[Any]) -> tuple[int, int]:
    """(messages seen, where the latest summary among them is; 0 for none), then more."""
    seen, start = seen_and_start
    for i, m in enumerate(more):
        if m.additional_kwargs.get(SUMMARY_MARK):
            start = seen + i
    return seen + len(more), start


def _seen_up_to_latest_summary(messages: Sequence[AnyMessage]) -> tuple[int, tuple[int, int]]:
    # A new process looks from the end: past a compaction it reads the short view only.
    start = next((i for i in range(len(messages) - 1, 0, -1) if is_summary(messages[i])), 0)
    return start, (start, start)


_view_starts: PrefixMemo[tuple[int, int]] = PrefixMemo(
    (0, 0), _view_start_after, seed=_seen_up_to_latest_summary
)


def last_human_id(messages: Sequence[AnyMessage], default: str | None) -> str | None:
    return next((m.id for m in reversed(messages) if isinstance(m, HumanMessage)), default)


def last_ai(state: Mapping[str, Any]) -> AIMessage | None:
    return next(
        (m for m in reversed(state.get("messages") or []) if isinstance(m, AIMessage)), None
    )


def open_turn_before_new_input(
    messages: Sequence[AnyMessage],
) -> tuple[int, list[AnyMessage]] | None:
    """(index of the AI message, the messages after it) when a model turn still has open
    calls and new input came after it (a crash mid-call, a client ignoring a pause)."""
    i = next((i for i in reversed(range(len(messages))) if isinstance(messages[i], AIMessage)), -1)
    last = messages[i] if i >= 0 else None
    calls = last.tool_calls if isinstance(last, AIMessage) else []
    answered = {m.tool_call_id for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
    if all(c["id"] in answered for c in calls):
        return None
    later = [
        m
        for m in messages[i + 1 :]
        if not isinstance(m, ToolMessage) or m.tool_call_id not in answered
    ]
    return (i, later) if any(isinstance(m, HumanMessage) for m in later) else None


def unanswered(state: Mapping[str, Any]) -> list[ToolCall]:
    """Tool calls of the last model turn that have no ToolMessage yet."""
    answered: set[str] = set()
    for msg in reversed(state.get("messages") or []):
        if isinstance(msg, ToolMessage):
            answered.add(msg.tool_call_id)
        elif isinstance(msg, AIMessage):
            return [c for c in msg.tool_calls if c["id"] not in answered]
        else:
            return []
    return []


def pairing_problem(
    messages: Sequence[BaseMessage], *, open_tail: bool = False, reply_open: bool = False
) -> str | None:
    """Why a history breaks the tool-call contract (every call's answer right after it,
    no answer without its call), or None. `open_tail`: the last model turn's calls may
    be open; `reply_open`: with messages after them too (a reply sent back)."""
    last_ai = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    open_calls: dict[str, str] = {}
    open_at = -1
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                return f"a tool result without its tool call ({m.tool_call_id})"
            del open_calls[m.tool_call_id]
            continue
        if open_calls and not (reply_open and open_at == last_ai):
            return f"tool calls without results: {sorted(open_calls.values())}"
        if isinstance(m, AIMessage):
            calls = [*m.tool_calls, *m.invalid_tool_calls]
            open_calls = {cid: c.get("name") or "?" for c in calls if (cid := c.get("id"))}
            open_at = i
    if open_calls and not (open_tail or reply_open):
        return f"tool calls without results: {sorted(open_calls.values())}"
    return None
