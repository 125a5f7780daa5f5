"""What a front end reads about threads: a row of the thread list, and a message of a
transcript as plain data (front ends never see LangChain message classes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ThreadStatus = Literal[
    "idle", "running", "interrupted", "awaiting_approval", "completed", "failed", "cancelled", "stopped"
]


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    title: str
    status: str  # a ThreadStatus
    created_at: float
    updated_at: float
    pending_since: float | None = None
    owner: str | None = None

    @property
    def awaiting_approval(self) -> bool:
        return self.status == "awaiting_approval"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ToolCallView(BaseModel):
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class MessageView(BaseModel):
    """One message of a transcript, as exports, `--json` and the front ends show it."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant", "tool", "system"] | str
    content: str
    id: str | None = None
    tool_calls: list[ToolCallView] = Field(default_factory=list)
    # Tool results: which call they answer, and how it ended (ok / error / rejected /
    # denied / responded) and how long it took.
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None
    tool_status: str | None = None
    duration_ms: float | None = None
    # A notice from Gatehouse itself (e.g. "Stopped by the person."), not model output.
    notice: bool = False

    @property
    def outcome(self) -> str:
        """How a tool result ended, for drawing it."""
        return self.tool_status or ("error" if self.status == "error" else "ok")

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude_defaults=True)
        data.setdefault("role", self.role)
        data.setdefault("content", self.content)
        data.setdefault("id", self.id)
        return data


# How Gatehouse marks its own messages (graph/agent/finish.py, graph/agent/tool_node.py).
NOTICE_MARK = "gatehouse_notice"
TOOL_STATUS_KEY = "gatehouse_status"
TOOL_DURATION_KEY = "gatehouse_duration_ms"
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def content_text(content: Any) -> str:
    """The text of message content: a string, or the text blocks of a block list."""
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


def view_of_fields(data: dict[str, Any]) -> MessageView:
    """A `MessageView` from a message's fields as plain data (its stored form), for
    readers that do not load LangChain; the same view `graph.service.transcript`
    makes of a message object."""
    kind = data.get("type")
    extra = data.get("additional_kwargs") or {}
    fields: dict[str, Any] = {"role": ROLES.get(kind, kind), "content": content_text(data.get("content")),
                              "id": data.get("id")}
    if kind in ("ai", "AIMessageChunk"):
        fields["tool_calls"] = [ToolCallView(id=c["id"], name=c["name"], args=c["args"])
                                for c in data.get("tool_calls") or []]
        fields["notice"] = bool(extra.get(NOTICE_MARK))
    if kind in ("tool", "ToolMessageChunk"):
        fields.update(tool_call_id=data.get("tool_call_id"), name=data.get("name"), status=data.get("status"))
        if TOOL_STATUS_KEY in extra:
            fields["tool_status"] = extra[TOOL_STATUS_KEY]
            fields["duration_ms"] = extra.get(TOOL_DURATION_KEY)
    return MessageView(**fields)
