"""Calling the chat model for one turn: stream its reply as events and turn it into
the `AIMessage` the graph stores, with tool-call arguments parsed strictly.

The model node (graph/agent.py) calls `stream_reply` and answers the calls whose
arguments were broken with `answer_invalid_calls`; nothing here touches state.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.context import RunContext
from graph.streaming import text_of
from graph.tool_runner import stream_writer


def stream_reply(
    model: Any,
    system_prompt: str | None,
    view: Mapping[str, Any],
    history: Sequence[AnyMessage],
    config: RunnableConfig,
    runtime: Runtime[RunContext],
) -> tuple[AIMessage, bool]:
    """Stream the model's reply (each text delta is a `text` event); (reply, cancelled).
    A cancelled reply keeps its text but drops half-streamed tool calls: nothing may be
    left without an answer."""
    prompt = system_text(system_prompt, view.get("model_context") or {})
    messages: list[AnyMessage] = [SystemMessage(prompt)] if prompt else []
    messages += history
    write = stream_writer()
    merged: AIMessageChunk | None = None
    for chunk in model.stream(messages, config):
        merged = chunk if merged is None else merged + chunk  # type: ignore[assignment]
        if text := text_of(chunk.content):
            write({"gatehouse": "text", "text": text, "message_id": chunk.id})
        if cancelled(runtime):
            ai = to_message(merged)
            return AIMessage(content=ai.content, id=ai.id), True
    return to_message(merged), False


def cancelled(runtime: Runtime[RunContext] | None) -> bool:
    ctx = getattr(runtime, "context", None)
    return bool(ctx is not None and isinstance(ctx, RunContext) and ctx.cancelled)


def system_text(base: str | None, extra: Mapping[str, str]) -> str:
    return "\n\n".join(p for p in [base or "", *extra.values()] if p)


def to_message(chunk: AIMessageChunk | None) -> AIMessage:
    if chunk is None:
        return AIMessage(content="", id=f"run-{uuid.uuid4()}")
    calls, invalid = strict_tool_calls(chunk)
    return AIMessage(
        content=chunk.content,
        id=chunk.id or f"run-{uuid.uuid4()}",
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=chunk.usage_metadata,
        response_metadata=chunk.response_metadata,
        additional_kwargs=chunk.additional_kwargs,
    )


def strict_tool_calls(chunk: AIMessageChunk) -> tuple[list[Any], list[Any]]:
    """Parse streamed tool-call arguments strictly.

    LangChain assembles streamed arguments with a lenient partial-JSON parser, which
    turns `{"path": "x"` (cut off) into a valid-looking call. A call that would run
    with arguments the model never finished must be answered with an error instead.
    """
    calls: list[Any] = []
    invalid: list[Any] = list(chunk.invalid_tool_calls)
    raw = {c.get("index", i): c for i, c in enumerate(chunk.tool_call_chunks)} if chunk.tool_call_chunks else {}
    for i, call in enumerate(chunk.tool_calls):
        call_id = call.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        source = next((c for c in raw.values() if c.get("id") and c.get("id") == call.get("id")), None)
        if source is None and len(raw) == len(chunk.tool_calls):
            source = list(raw.values())[i]
        text = source.get("args") if source else None
        if isinstance(text, str) and text.strip():
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                invalid.append({"name": call["name"], "args": text, "id": call_id, "error": str(exc), "type": "invalid_tool_call"})
                continue
            if not isinstance(parsed, dict):
                invalid.append({"name": call["name"], "args": text, "id": call_id, "error": "not a JSON object", "type": "invalid_tool_call"})
                continue
        calls.append({**call, "id": call_id})
    for bad in invalid:
        bad["id"] = bad.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return calls, invalid


def answer_invalid_calls(ai: AIMessage) -> list[ToolMessage]:
    """Tool calls whose arguments were not a JSON object: answer with an error now."""
    return [
        ToolMessage(
            content=(
                f"Error: the arguments for {c.get('name') or 'this tool'} were not a valid JSON object "
                f"({c.get('error') or 'could not parse'}): {c.get('args')!r}"
            ),
            tool_call_id=c["id"],
            name=c.get("name") or "unknown",
            status="error",
        )
        for c in ai.invalid_tool_calls
    ]
