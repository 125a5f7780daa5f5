"""A message of a transcript as plain data (`MessageView`, with its `ToolCallView`s):
what exports, `--json` and the front ends show; front ends never see LangChain message
classes. Built by `graph.protocol.threads.view_of_fields`; importable from there too.
Apart from graph/protocol/threads.py because these are pydantic models, which
listing threads does not need.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
    # How a call that needed approval was let through: "approve", "edit",
    # "auto_approve" (auto-approve was on), "always_allowed" (a standing grant, named
    # in `grant`), "run_again"; None for calls that run freely.
    decision: str | None = None
    grant: str | None = None
    # A notice from Gatehouse itself (e.g. "Stopped by the person."), not model output.
    notice: bool = False
    # The model's reasoning ("thinking"), kept apart from its answer.
    reasoning: str | None = None
    # The reply ended before it was finished (the stream was cut).
    cut_off: bool = False
    # A tool result too large for the model's context: `content` is what the model got
    # (the head and a reference); the whole output (`total_chars` characters) is
    # `session.tool_output(thread_id, tool_call_id)`.
    offloaded: bool = False
    total_chars: int | None = None
    # The summary compaction wrote in place of older messages (role "user").
    summary: bool = False

    @property
    def auto_approved(self) -> bool:
        return self.decision == "auto_approve"

    @property
    def without_a_click(self) -> str | None:
        """Why a call that would ask ran without anyone clicking: "auto-approved", or
        "always allowed (write_file:*.md)"; None for a call a person approved or a free one."""
        if self.decision == "auto_approve":
            return "auto-approved"
        if self.decision == "always_allowed":
            return f"always allowed ({self.grant})" if self.grant else "always allowed"
        return None

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
