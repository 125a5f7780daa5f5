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
    # Why the last run failed or stopped (kept so a later process can say it).
    reason: str | None = None

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
    # How a call that needed approval was let through: "approve", "edit",
    # "auto_approve" (auto-approve was on), "run_again"; None for calls that run freely.
    decision: str | None = None
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
    def outcome(self) -> str:
        """How a tool result ended, for drawing it."""
        return self.tool_status or ("error" if self.status == "error" else "ok")

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude_defaults=True)
        data.setdefault("role", self.role)
        data.setdefault("content", self.content)
        data.setdefault("id", self.id)
        return data
