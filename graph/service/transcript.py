"""A thread's messages as plain data (`MessageView`) and as an export: what front
ends, `--json` and files get instead of LangChain message classes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from graph.agent.finish import NOTICE_MARK
from graph.agent.history import text_of
from graph.agent.model_call import is_cut_off
from graph.agent.reasoning import reasoning_of
from graph.protocol.threads import MessageView, ToolCallView

ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def message_view(m: BaseMessage) -> MessageView:
    fields: dict = {"role": ROLES.get(m.type, m.type), "content": text_of(m.content), "id": m.id}
    if isinstance(m, AIMessage):
        fields["tool_calls"] = [ToolCallView(id=c["id"], name=c["name"], args=c["args"]) for c in m.tool_calls]
        fields["notice"] = bool(m.additional_kwargs.get(NOTICE_MARK))
        fields["reasoning"] = reasoning_of(m.additional_kwargs, m.content) or None
        fields["cut_off"] = is_cut_off(m)
    if isinstance(m, ToolMessage):
        fields.update(tool_call_id=m.tool_call_id, name=m.name, status=m.status)
        # How the call ended (ok / error / rejected / denied / responded), and its duration.
        if "gatehouse_status" in m.additional_kwargs:
            fields["tool_status"] = m.additional_kwargs["gatehouse_status"]
            fields["duration_ms"] = m.additional_kwargs.get("gatehouse_duration_ms")
    return MessageView(**fields)


def export_json(thread_id: str, title: str, messages: Sequence[BaseMessage]) -> str:
    return json.dumps(
        {"thread_id": thread_id, "title": title, "messages": [message_view(m).to_dict() for m in messages]},
        indent=2,
        ensure_ascii=False,
    )


def export_markdown(thread_id: str, title: str, messages: Sequence[BaseMessage]) -> str:
    lines = [f"# {title}", "", f"Thread `{thread_id}`", ""]
    for m in messages:
        view = message_view(m)
        lines.append(f"## {view.role}" + (f" · {view.name}" if view.name else ""))
        if view.reasoning:
            # Collapsed where Markdown renders HTML; never part of the answer text.
            lines += ["", "<details><summary>thinking</summary>", "", view.reasoning, "", "</details>"]
        if view.content:
            lines += ["", view.content]
        if view.cut_off:
            lines += ["", "*(cut off: the reply ended before it was finished)*"]
        for call in view.tool_calls:
            lines += ["", f"→ `{call.name}` `{json.dumps(call.args, ensure_ascii=False)}`"]
        lines.append("")
    return "\n".join(lines)
