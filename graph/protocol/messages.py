"""A message of a transcript as plain data (`MessageView`, `ToolCallView`), for
exports, `--json` and front ends; plain dataclasses (no pydantic in a fresh process).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from gatehouse.graph.protocol.wording import decided

# How run_command's result ends (tools/shell.py): its output, then `[exit code N]`.
_EXIT = re.compile(r"\[exit code (-?\d+)\]\s*$")
COMMAND_TOOL = "run_command"


def exit_code(name: str | None, output: str) -> int | None:
    """The exit code a command's result reports; None for another tool, or none."""
    match = _EXIT.search(output[-40:]) if name == COMMAND_TOOL else None
    return int(match[1]) if match else None


def call_outcome(name: str | None, status: str, output: str) -> str:
    """How a call ended, for drawing it: a command with a non-zero exit code failed."""
    return "error" if status == "ok" and exit_code(name, output) not in (None, 0) else status


def exit_note(name: str | None, output: str) -> str:
    code = exit_code(name, output)
    return f" (exit code {code})" if code not in (None, 0) else ""


@dataclass(frozen=True, kw_only=True)
class ToolCallView:
    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "args": self.args}


@dataclass(frozen=True, kw_only=True)
class MessageView:
    role: Literal["user", "assistant", "tool", "system"] | str
    content: str
    id: str | None = None
    tool_calls: list[ToolCallView] = field(default_factory=list)
    # Tool results: the call answered, how it ended, how long it took.
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None
    tool_status: str | None = None
    duration_ms: float | None = None
    # How a gated call was let through (None for free calls).
    decision: str | None = None
    grant: str | None = None
    notice: bool = False  # from Gatehouse itself ("Stopped by the person."), not the model
    reasoning: str | None = None
    cut_off: bool = False  # the stream was cut before the reply was finished
    # `content` is what the model got of a large output (the whole: `tool_output`).
    offloaded: bool = False
    total_chars: int | None = None
    summary: bool = False  # compaction's summary of older messages (role "user")

    @property
    def auto_approved(self) -> bool:
        return self.decision == "auto_approve"

    @property
    def without_a_click(self) -> str | None:
        """Why a gated call ran without a click: "auto-approved", "always allowed (x:*.md)"."""
        if self.decision not in ("auto_approve", "always_allowed"):
            return None
        words = decided(self.decision)
        return (
            f"{words} ({self.grant})" if self.grant and self.decision != "auto_approve" else words
        )

    @property
    def outcome(self) -> str:
        status = self.tool_status or ("error" if self.status == "error" else "ok")
        return call_outcome(self.name, status, self.content)

    def to_dict(self) -> dict[str, Any]:
        """The fields that differ from their defaults, and always role, content and id."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "tool_calls":
                if value:
                    data["tool_calls"] = [c.to_dict() for c in value]
            elif f.name in ("role", "content") or value != f.default:
                data[f.name] = value
        data.setdefault("id", self.id)
        return data
