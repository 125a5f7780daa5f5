"""Reading the conversation: the latest turn's open calls, the last user message, and
the text of message content (a string or a list of content blocks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage


def text_of(content: Any) -> str:
    """The text of message content: a string, or the text blocks of a block list
    (what Agent Chat UI and other LangGraph clients send)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type", "text") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return ""


def last_human_id(messages: Sequence[AnyMessage], default: str | None) -> str | None:
    for msg in reversed(messages):
        if isinstance(msg, HumanMessage):
            return msg.id
    return default


def last_ai(state: Mapping[str, Any]) -> AIMessage | None:
    for msg in reversed(state.get("messages") or []):
        if isinstance(msg, AIMessage):
            return msg
    return None


def unanswered(state: Mapping[str, Any]) -> list[ToolCall]:
    """Tool calls of the last model turn that have no ToolMessage yet."""
    messages = state.get("messages") or []
    answered: set[str] = set()
    for msg in reversed(messages):
        if isinstance(msg, ToolMessage):
            answered.add(msg.tool_call_id)
        elif isinstance(msg, AIMessage):
            return [c for c in msg.tool_calls if c["id"] not in answered]
        else:
            return []
    return []
