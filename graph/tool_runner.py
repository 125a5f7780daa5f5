"""Runs one tool call (one `Send` task) and always answers it with a ToolMessage."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_stream_writer
from langgraph.errors import GraphBubbleUp
from pydantic import ValidationError

OUTPUT_CAP_CHARS = 50_000

# The call a tool is running for, so `stream_output` can label its lines.
current_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "gatehouse_call_id", default=None
)


def stream_writer() -> Callable[[Any], None]:
    """LangGraph's `custom` stream writer of the current run; a no-op outside a run
    (direct tool calls in tests and scripts)."""
    try:
        return get_stream_writer()
    except Exception:
        return _discard


def _discard(_: Any) -> None:
    return None


def emit(kind: str, **payload: Any) -> None:
    """Send a Gatehouse event through LangGraph's `custom` stream mode."""
    stream_writer()({"gatehouse": kind, **payload})


def stream_output(text: str) -> None:
    """For tools: show a line of progress while the tool runs (e.g. shell output)."""
    call_id = current_call_id.get()
    if call_id is not None:
        emit("tool_output", call_id=call_id, text=text)


def finished(call: ToolCall, msg: ToolMessage, status: str, duration_ms: float = 0.0) -> ToolMessage:
    """Mark a call's result with how it ended (kept in the thread, so history can show
    rejected / denied / answered without guessing from the text) and announce it."""
    msg.additional_kwargs["gatehouse_status"] = status
    msg.additional_kwargs["gatehouse_duration_ms"] = round(duration_ms, 2)
    emit(
        "tool_finished",
        call_id=call["id"],
        name=call["name"],
        status=status,
        output=str(msg.content),
        duration_ms=round(duration_ms, 2),
    )
    return msg


def answer(call: ToolCall, content: str, *, status: str = "success") -> ToolMessage:
    return ToolMessage(
        content=content, tool_call_id=call["id"], name=call["name"], status=status  # type: ignore[arg-type]
    )


def invoke_tool(
    tool: BaseTool | None, call: ToolCall, config: Any, tools: Mapping[str, BaseTool]
) -> ToolMessage:
    """Run the call; bad arguments, unknown tools and exceptions become error results."""
    if tool is None:
        names = ", ".join(sorted(tools)) or "none"
        return answer(call, f"Error: unknown tool {call['name']!r}. Available tools: {names}.", status="error")
    token = current_call_id.set(call["id"])
    try:
        result = tool.invoke({**call, "type": "tool_call"}, config)
    except GraphBubbleUp:
        raise
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()
        )
        return answer(call, f"Error: invalid arguments for {call['name']}: {problems}", status="error")
    except Exception as exc:
        return answer(call, f"Error: {call['name']} failed: {type(exc).__name__}: {exc}", status="error")
    finally:
        current_call_id.reset(token)
    if not isinstance(result, ToolMessage):
        result = answer(call, str(result))
    if isinstance(result.content, str) and len(result.content) > OUTPUT_CAP_CHARS:
        result.content = result.content[:OUTPUT_CAP_CHARS] + f"\n… (output cut at {OUTPUT_CAP_CHARS} characters)"
    return result


def timed(fn: Callable[[], ToolMessage]) -> tuple[ToolMessage, float]:
    start = time.perf_counter()
    msg = fn()
    return msg, (time.perf_counter() - start) * 1000
