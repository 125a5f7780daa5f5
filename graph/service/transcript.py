"""A thread's messages as plain data (`MessageView`) and as an export, which is also
an import format: {"format", "version", "thread_id", "title", "messages" (views),
"lc_messages" (exact: what an import recreates, else rebuilt from the views),
"tool_outputs", and handover.py's "pending", "journal", "decisions"}.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from pydantic import TypeAdapter, ValidationError

from gatehouse.graph.agent.history import pairing_problem
from gatehouse.graph.protocol.errors import ImportRefused
from gatehouse.graph.protocol.threads import (
    CUT_OFF_KEY,
    DECISION_KEY,
    NOTICE_MARK,
    OFFLOAD_MARK,
    REASONING_KEY,
    SUMMARY_MARK,
    MessageView,
    view_of_fields,
)

EXPORT_FORMAT = "gatehouse-thread"
EXPORT_VERSION = 1


def message_view(m: BaseMessage) -> MessageView:
    fields: dict[str, Any] = {
        "type": m.type,
        "content": m.content,
        "id": m.id,
        "additional_kwargs": m.additional_kwargs,
    }
    if isinstance(m, AIMessage):
        fields["tool_calls"] = m.tool_calls
    if isinstance(m, ToolMessage):
        fields.update(tool_call_id=m.tool_call_id, name=m.name, status=m.status)
    return view_of_fields(fields)


def export_json(
    thread_id: str,
    title: str,
    messages: Sequence[BaseMessage],
    tool_outputs: Mapping[str, str] | None = None,
    carried: Mapping[str, Any] | None = None,
) -> str:
    return json.dumps(
        {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "thread_id": thread_id,
            "title": title,
            "messages": [message_view(m).to_dict() for m in messages],
            "lc_messages": [message_to_dict(m) for m in messages],
            "tool_outputs": dict(tool_outputs or {}),
            **(carried or {}),
        },
        indent=2,
        ensure_ascii=False,
        default=str,
    )


@dataclass
class Exported:
    """A thread read back from an export, checked."""

    thread_id: str | None
    title: str | None
    messages: list[BaseMessage]
    tool_outputs: dict[str, str] = field(default_factory=dict)
    # What travels beside the messages (graph/service/handover.py checks and writes it).
    pending: dict[str, Any] | None = None
    journal: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)


def read_export(data: str | bytes | Mapping[str, Any]) -> Exported:
    """Parse and check an export; `ImportRefused` says what is wrong."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ImportRefused(f"not a JSON thread export: {exc}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
        raise ImportRefused('not a thread export: expected an object with a "messages" list')
    if (
        data.get("format", EXPORT_FORMAT) != EXPORT_FORMAT
        or data.get("version", EXPORT_VERSION) > EXPORT_VERSION
    ):
        raise ImportRefused(
            f"unsupported export {data.get('format')!r} version {data.get('version')!r}; "
            f"this Gatehouse reads {EXPORT_FORMAT!r} up to version {EXPORT_VERSION}"
        )
    raw = data.get("lc_messages")
    messages = (
        _from_lc(raw)
        if isinstance(raw, list)
        else [_from_view(i, v) for i, v in enumerate(data["messages"])]
    )
    if not messages:
        raise ImportRefused("the export has no messages")
    ids = [m.id or "" for m in messages]
    if "" in ids:
        raise ImportRefused("every message needs an id")
    if duplicates := sorted(i for i, n in Counter(ids).items() if n > 1):
        raise ImportRefused(f"message ids appear more than once: {duplicates}")
    pending = data.get("pending")
    if pending is not None and not isinstance(pending, Mapping):
        raise ImportRefused('"pending" must be the pending request (an object) or null')
    # messages_from_dict makes each message its own class: all of them are AnyMessage's.
    if problem := pairing_problem(
        cast("list[AnyMessage]", messages), open_tail=pending is not None
    ):
        raise ImportRefused(
            f"importing it would break the pairing of tool calls and results: {problem} "
            '(only an export that carries the request the thread was waiting for, "pending", may end with '
            "open tool calls)"
        )
    for key, what in (("journal", "journal entries"), ("decisions", "decision records")):
        rows = data.get(key) or []
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise ImportRefused(f'"{key}" must be a list of {what}')
    outputs = data.get("tool_outputs") or {}
    if not isinstance(outputs, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in outputs.items()
    ):
        raise ImportRefused('"tool_outputs" must map tool call ids to text')
    thread_id, title = data.get("thread_id"), data.get("title")
    return Exported(
        thread_id=str(thread_id) if thread_id else None,
        title=str(title) if title else None,
        messages=messages,
        tool_outputs=dict(outputs),
        pending=dict(pending) if pending is not None else None,
        journal=[dict(e) for e in data.get("journal") or []],
        decisions=[dict(d) for d in data.get("decisions") or []],
    )


def _from_lc(raw: list[Any]) -> list[BaseMessage]:
    try:
        messages = messages_from_dict(raw)
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise ImportRefused(
            f"malformed message in lc_messages: {type(exc).__name__}: {exc}"
        ) from None
    for i, m in enumerate(messages):
        if not isinstance(m, HumanMessage | AIMessage | ToolMessage | SystemMessage):
            raise ImportRefused(f"message {i}: a {type(m).__name__} cannot be imported")
    return messages


@functools.cache
def _view_checker() -> TypeAdapter[MessageView]:
    return TypeAdapter(MessageView)


def _from_view(i: int, view: Any) -> BaseMessage:
    try:
        v = _view_checker().validate_python(view)
    except ValidationError as exc:
        raise ImportRefused(f"message {i}: {exc.errors()[0]['msg']}") from None
    if v.role == "user":
        return HumanMessage(
            v.content, id=v.id, additional_kwargs={SUMMARY_MARK: True} if v.summary else {}
        )
    if v.role == "assistant":
        marks = {
            NOTICE_MARK: v.notice and "stop",
            REASONING_KEY: v.reasoning,
            CUT_OFF_KEY: v.cut_off,
        }
        kwargs: dict[str, Any] = {k: x for k, x in marks.items() if x}
        calls = [
            {"id": c.id, "name": c.name, "args": c.args, "type": "tool_call"} for c in v.tool_calls
        ]
        return AIMessage(v.content, id=v.id, tool_calls=calls, additional_kwargs=kwargs)
    if v.role == "tool":
        if not v.tool_call_id:
            raise ImportRefused(f"message {i}: a tool result needs its tool_call_id")
        kwargs = {}
        if v.tool_status:
            kwargs.update(
                gatehouse_status=v.tool_status, gatehouse_duration_ms=v.duration_ms or 0.0
            )
        if v.offloaded:
            kwargs[OFFLOAD_MARK] = {"total_chars": v.total_chars or 0, "total_lines": 0}
        if v.decision:
            kwargs[DECISION_KEY] = v.decision
        return ToolMessage(
            v.content,
            id=v.id,
            tool_call_id=v.tool_call_id,
            name=v.name,
            status=v.status or "success",
            additional_kwargs=kwargs,
        )
    if v.role == "system":
        return SystemMessage(v.content, id=v.id)
    raise ImportRefused(f"message {i}: unknown role {v.role!r}")


def _details(summary: str, body: str) -> list[str]:
    # Collapsed where Markdown renders HTML.
    return [f"<details><summary>{summary}</summary>", "", body, "", "</details>"]


def export_markdown(thread_id: str, title: str, messages: Sequence[BaseMessage]) -> str:
    lines = [f"# {title}", "", f"Thread `{thread_id}`", ""]
    for m in messages:
        view = message_view(m)
        if view.summary:
            note = "*(compacted: from here on the model is sent this summary in place of the turns above)*"
            lines += ["---", "", note, "", *_details("summary sent to the model", view.content)]
            lines += ["", "---", ""]
            continue
        lines.append(" · ".join(filter(None, [f"## {view.role}", view.name, view.without_a_click])))
        if view.reasoning:  # never part of the answer text
            lines += ["", *_details("thinking", view.reasoning)]
        if view.content:
            lines += ["", view.content]
        if view.cut_off:
            lines += ["", "*(cut off: the reply ended before it was finished)*"]
        if view.offloaded:
            stored = f"{view.total_chars or 0:,} characters; the model saw the start"
            lines += ["", f"*(output stored aside: {stored})*"]
        for call in view.tool_calls:
            lines += ["", f"→ `{call.name}` `{json.dumps(call.args, ensure_ascii=False)}`"]
        lines.append("")
    return "\n".join(lines)
