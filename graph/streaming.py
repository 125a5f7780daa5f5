"""Translate LangGraph stream chunks into Gatehouse events (no printed-text parsing).

Runs are streamed with `stream_mode=["messages", "custom", "updates"]`:
- `messages` gives the model node's token chunks -> `TextDelta`;
- `custom` carries what nodes and tools emit via `graph.tool_runner.emit`;
- `updates` carries `__interrupt__` -> `ApprovalRequired`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessageChunk

from graph import events as ev

STREAM_MODES = ["messages", "custom", "updates"]

_CUSTOM: dict[str, type[ev._EventBase]] = {
    "tool_started": ev.ToolStarted,
    "tool_output": ev.ToolOutput,
    "tool_finished": ev.ToolFinished,
    "usage": ev.Usage,
    "compacted": ev.Compacted,
    "notice": ev.Notice,
}


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""


def translate(mode: str, chunk: Any, thread_id: str) -> Iterator[ev.Event]:
    if mode == "messages":
        message, meta = chunk
        if meta.get("langgraph_node") == "model" and isinstance(message, AIMessageChunk):
            text = text_of(message.content)
            if text:
                yield ev.TextDelta(thread_id=thread_id, text=text, message_id=message.id)
    elif mode == "custom":
        if isinstance(chunk, dict) and (cls := _CUSTOM.get(chunk.get("gatehouse", ""))):
            payload = {k: v for k, v in chunk.items() if k != "gatehouse"}
            yield cls(thread_id=thread_id, **payload)  # type: ignore[arg-type]
    elif mode == "updates" and isinstance(chunk, dict):
        for interrupt in chunk.get("__interrupt__", ()):
            yield ev.ApprovalRequired(thread_id=thread_id, interrupt_id=interrupt.id, request=interrupt.value)
