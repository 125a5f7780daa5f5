"""Translate LangGraph stream chunks into Gatehouse events (no printed-text parsing).

Runs are streamed with `stream_mode=["custom", "updates"]`:
- `custom` carries what nodes and tools emit (graph/tool_runner.py), the model's
  text deltas included;
- `updates` carries `__interrupt__` -> `ApprovalRequired`.

Not `messages`: LangGraph's handler for it scans the whole state at the start of
every node (a cost that grows with the thread), and with `messages` or `custom`
every task already runs on LangGraph's thread pool. LangGraph Server and Studio
clients may still ask for `messages`; the model's tokens arrive there as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graph import events as ev

STREAM_MODES = ["custom", "updates"]

_CUSTOM: dict[str, type[ev._EventBase]] = {
    "text": ev.TextDelta,
    "reasoning": ev.ReasoningDelta,
    "model_retried": ev.ModelRetried,
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
    if mode == "custom":
        if isinstance(chunk, dict) and (cls := _CUSTOM.get(chunk.get("gatehouse", ""))):
            payload = {k: v for k, v in chunk.items() if k != "gatehouse"}
            yield cls(thread_id=thread_id, **payload)  # type: ignore[arg-type]
    elif mode == "updates" and isinstance(chunk, dict):
        for interrupt in chunk.get("__interrupt__", ()):
            yield ev.ApprovalRequired(thread_id=thread_id, interrupt_id=interrupt.id, request=interrupt.value)
