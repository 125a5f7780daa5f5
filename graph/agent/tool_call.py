"""Running one tool call, which always ends in exactly one ToolMessage: a result, or
an error the model can read (bad arguments, an unknown tool, an exception)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ValidationError

from gatehouse.graph.agent import tool_messages as say
from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.offload import offloaded
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.events import ToolStatus
from gatehouse.graph.protocol.threads import TOOL_DURATION_KEY, TOOL_STATUS_KEY
from gatehouse.graph.protocol.tools import output_to, stop_on


def finished(
    call: ToolCall, msg: ToolMessage, status: ToolStatus, duration_ms: float = 0.0
) -> ToolMessage:
    """Mark a call's result with how it ended (kept in the thread, so history can show
    rejected / denied / answered without guessing from the text) and announce it."""
    msg.additional_kwargs[TOOL_STATUS_KEY] = status
    msg.additional_kwargs[TOOL_DURATION_KEY] = round(duration_ms, 2)
    mark = offloaded(msg)
    emit(
        ev.ToolFinished,
        call_id=call["id"],
        name=call["name"],
        status=status,
        output=str(msg.content),
        duration_ms=round(duration_ms, 2),
        offloaded=mark is not None,
        total_chars=mark["total_chars"] if mark else None,
    )
    return msg


def answered_unrun(call: Mapping[str, Any], content: str) -> ToolMessage:
    """A call answered with an error without running (bad arguments, a repeated call,
    a stopped run), announced like any failed call: `tool_started`, then
    `tool_finished` with status "error", so front ends show what happened to it."""
    args = call.get("args")
    if isinstance(args, str):  # arguments that were not a JSON object
        try:
            args = json.loads(args)
        except ValueError:
            args = None
    shown = args if isinstance(args, dict) else {}
    name = call.get("name") or "unknown"
    emit(ev.ToolStarted, call_id=call["id"], name=name, args=shown)
    shown_call: ToolCall = {"id": call["id"], "name": name, "args": shown, "type": "tool_call"}
    return finished(shown_call, say.error_result(shown_call, content), "error")


def invoke_tool(
    tool: BaseTool | None,
    call: ToolCall,
    config: Any,
    tools: Mapping[str, BaseTool],
    stop: threading.Event | None = None,
) -> ToolMessage:
    """Run the call; bad arguments, unknown tools and exceptions become error results.
    `stop` is the run's cancel signal: tools that run long end when it is set."""
    if tool is None:
        return say.unknown_tool(call, list(tools))

    def show(text: str) -> None:
        emit(ev.ToolOutput, call_id=call["id"], text=text)

    try:
        with output_to(show), stop_on(stop):
            result = tool.invoke({**call, "type": "tool_call"}, config)
    except GraphBubbleUp:
        raise
    except ValidationError as exc:
        return say.bad_arguments(call, _problems(exc))
    except Exception as exc:
        return say.failed(call, exc)
    # Its size is dealt with by the caller (offload.py).
    return result if isinstance(result, ToolMessage) else say.tool_result(call, str(result))


def args_problem(tool: BaseTool, args: dict[str, Any]) -> str | None:
    """Why `args` would not pass the tool's schema, or None when they would."""
    schema = tool.args_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(args)
        except ValidationError as exc:
            return _problems(exc)
        return None
    if isinstance(schema, dict):  # JSON schema (MCP tools): check what we can cheaply
        missing = [k for k in schema.get("required", []) if k not in args]
        return f"missing required argument(s) {missing}" if missing else None
    return None


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors())
