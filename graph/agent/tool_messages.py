"""Every ToolMessage the agent writes, and its wording, in one place: a change here
changes what every model is told."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.messages import ToolCall, ToolMessage

ResultStatus = Literal["success", "error"]

# A "Mark as resolved" (graph/agent/resolve.py) rejects the open calls with this reason.
RESOLVED_NOTE = "The person marked this request as resolved without approving it."


def tool_result(
    call: Mapping[str, Any], content: str, *, status: ResultStatus = "success"
) -> ToolMessage:
    return ToolMessage(content=content, tool_call_id=call["id"], name=call["name"], status=status)


def error_result(call: Mapping[str, Any], content: str) -> ToolMessage:
    return tool_result(call, content, status="error")


# -- a person's answer ----------------------------------------------------------------
def rejected(call: ToolCall, reason: str | None) -> ToolMessage:
    text = f"The person declined this call to {call['name']}; it did not run."
    if reason and reason.strip():
        text += f" Their reason: {reason.strip()}"
    return error_result(call, text)


def responded(call: ToolCall, text: str) -> ToolMessage:
    return tool_result(call, text)


def edit_note(original: Mapping[str, Any], edited: Mapping[str, Any]) -> str:
    return (
        "Note: the person changed the arguments before approving. "
        f"Requested: {json.dumps(original, default=str)}; ran with: {json.dumps(edited, default=str)}."
    )


def outcome_failed(call: ToolCall, note: str | None) -> ToolMessage:
    text = (
        f"Error: {call['name']} was interrupted by a crash and its outcome is unknown; "
        "the person marked it as failed."
    )
    if note and note.strip():
        text += f" Their note: {note.strip()}"
    return error_result(call, text)


# -- calls answered without running -----------------------------------------------------
def denied(call: ToolCall) -> ToolMessage:
    return error_result(
        call, f"Error: the policy does not allow {call['name']} here; the call was not run."
    )


def invalid_for_review(call: ToolCall, problem: str | None) -> ToolMessage:
    return error_result(
        call,
        f"Error: invalid arguments for {call['name']}: {problem}. The call was not run "
        "and nobody was asked; call it again with arguments that fit the tool.",
    )


def not_run(why: str | None) -> str:
    return f"Not run: {why or 'the run was stopped'}"


def sent_back(reason: str) -> str:
    return f"Not run: the reply was sent back ({reason})."


def cut_off(name: str | None) -> str:
    return f"Error: your reply was cut off before it finished, so this call to {name or 'a tool'} was not run."


def not_json(name: str | None, error: str | None, args: Any) -> str:
    return (
        f"Error: the arguments for {name or 'this tool'} were not a valid JSON object "
        f"({error or 'could not parse'}): {args!r}"
    )


def repeated(name: str, times: int) -> str:
    return (
        f"Not run: this is call {times} in a row to {name} with the same arguments, and it would "
        "give the same result. Use the result you already have, try a different approach, or tell the "
        "person what is blocking you. Calling it again with the same arguments stops the run."
    )


# -- a call that ran, or tried to -------------------------------------------------------
def unknown_tool(call: ToolCall, known: list[str]) -> ToolMessage:
    names = ", ".join(sorted(known)) or "none"
    return error_result(call, f"Error: unknown tool {call['name']!r}. Available tools: {names}.")


def bad_arguments(call: ToolCall, problems: str) -> ToolMessage:
    return error_result(call, f"Error: invalid arguments for {call['name']}: {problems}")


def failed(call: ToolCall, exc: BaseException) -> ToolMessage:
    return error_result(call, f"Error: {call['name']} failed: {type(exc).__name__}: {exc}")


def stopped_while_running(content: Any, seconds: float) -> str:
    return (
        f"Stopped by the person after {seconds:.1f} s while it ran; it may not have finished."
        f"\n\n{content}"
    )


def with_note(note: str, content: Any) -> str:
    return f"{note}\n\n{content}"
