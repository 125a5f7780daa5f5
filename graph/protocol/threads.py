"""What a front end reads about threads: a row of the thread list, a message of a
transcript as plain data (messages.py's views, built here), thread ids."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, cast

from gatehouse.graph.protocol.errors import InvalidThreadId
from gatehouse.graph.protocol.messages import MessageView, ToolCallView

ThreadStatus = Literal[
    "idle",
    "running",
    "interrupted",
    "awaiting_approval",
    "completed",
    "failed",
    "cancelled",
    "stopped",
]


# A thread id is printable ASCII: it can be shown, typed and put in a URL as it is.
THREAD_ID_MAX = 128
_THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=~-]*")


def thread_id_problem(thread_id: object) -> str | None:
    if not isinstance(thread_id, str):
        return f"a thread id is a string, not {type(thread_id).__name__}"
    if not thread_id:
        return "a thread id cannot be empty"
    if len(thread_id) > THREAD_ID_MAX:
        return (
            f"a thread id has at most {THREAD_ID_MAX} characters (this one has {len(thread_id):,})"
        )
    if not _THREAD_ID.fullmatch(thread_id):
        return (
            "a thread id is letters, digits and . _ : @ + = ~ - (starting with a letter or digit); "
            f"this one is {shown_id(thread_id)}"
        )
    return None


def check_thread_id(thread_id: object) -> str:
    """`thread_id` when it is a valid thread id, else `InvalidThreadId` (nothing changes)."""
    if (problem := thread_id_problem(thread_id)) is not None:
        raise InvalidThreadId(problem)
    return cast(str, thread_id)  # thread_id_problem refuses anything but a str


def shown_id(thread_id: str, limit: int = 60) -> str:
    """A thread id as it may be shown: control and non-ASCII characters escaped, cut to `limit`."""
    text = thread_id.encode("ascii", "backslashreplace").decode("ascii")
    text = printable(text)
    return '"' + text[:limit] + ("…" if len(text) > limit else "") + '"'


def printable(text: str) -> str:
    """`text` with every unprintable character written as an escape: shown, never acting."""
    return "".join(
        c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) > 0xFF else f"\\x{ord(c):02x}"
        for c in text
    )


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    title: str
    status: ThreadStatus
    created_at: float
    updated_at: float
    pending_since: float | None = None
    owner: str | None = None
    reason: str | None = None  # why the last run failed or stopped

    @property
    def awaiting_approval(self) -> bool:
        return self.status == "awaiting_approval"

    def to_dict(self) -> dict[str, Any]:
        # Its fields are text and numbers: `asdict`'s deep copies were 0.4 s of
        # `threads --json` at 10,000 (issue 58).
        return dict(vars(self))


@dataclass(frozen=True)
class Branches:
    """The versions of one user message on the thread's branch (forks, rewrites)."""

    index: int  # the message's index in the transcript
    message_ids: tuple[str, ...]  # every version's message id, oldest first
    current: int  # which of them the thread is on (0-based)
    previews: tuple[str, ...]  # each version's first words

    @property
    def label(self) -> str:
        """As chat apps show it: "2/3"."""
        return f"{self.current + 1}/{len(self.message_ids)}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


# Gatehouse's marks on messages, and where providers put reasoning (for readers
# without LangChain too).
NOTICE_MARK = "gatehouse_notice"
SUMMARY_MARK = "gatehouse_summary"
OFFLOAD_MARK = "gatehouse_offloaded"
CUT_OFF_KEY = "gatehouse_cut_off"
DECISION_KEY = "gatehouse_decision"
GRANT_KEY = "gatehouse_grant"  # the standing grant a call ran under
TOOL_STATUS_KEY = "gatehouse_status"
TOOL_DURATION_KEY = "gatehouse_duration_ms"
REASONING_KEY = "reasoning_content"
REASONING_BLOCKS = ("reasoning", "thinking")  # block types, each with its text under its type
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def content_text(content: Any) -> str:
    """The text of message content: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type", "text") == "text")
    )


def reasoning_of(additional_kwargs: Mapping[str, Any], content: Any = None) -> str:
    """All the reasoning a message (or chunk) carries: its field, then its blocks."""
    field = additional_kwargs.get(REASONING_KEY)
    blocks = content if isinstance(content, list) else []
    return (field if isinstance(field, str) else "") + "".join(
        str(b.get(b["type"]) or "") + _summary_text(b)
        for b in blocks
        if isinstance(b, dict) and b.get("type") in REASONING_BLOCKS
    )


def _summary_text(block: Mapping[str, Any]) -> str:
    # The Responses API's reasoning summaries: what OpenAI lets a person see.
    summary = block.get("summary")
    if not isinstance(summary, list):
        return ""
    return "".join(str(s.get("text") or "") for s in summary if isinstance(s, dict))


def view_of_fields(data: Mapping[str, Any]) -> MessageView:
    """A `MessageView` from a message's fields: the one way a message becomes a view."""
    kind = data.get("type")
    extra = data.get("additional_kwargs") or {}
    content = data.get("content")
    fields: dict[str, Any] = {
        "role": ROLES.get(str(kind), kind),
        "content": content_text(content),
        "id": data.get("id"),
    }
    if kind == "human" and extra.get(SUMMARY_MARK):
        fields["summary"] = True
    if kind in ("ai", "AIMessageChunk"):
        fields["tool_calls"] = [
            ToolCallView(id=c["id"], name=c["name"], args=c["args"])
            for c in data.get("tool_calls") or []
        ]
        fields["notice"] = bool(extra.get(NOTICE_MARK))
        fields["reasoning"] = reasoning_of(extra, content) or None
        fields["cut_off"] = bool(extra.get(CUT_OFF_KEY))
    if kind in ("tool", "ToolMessageChunk"):
        fields.update(
            tool_call_id=data.get("tool_call_id"), name=data.get("name"), status=data.get("status")
        )
        if TOOL_STATUS_KEY in extra:
            fields["tool_status"] = extra[TOOL_STATUS_KEY]
            duration = extra.get(TOOL_DURATION_KEY)
            fields["duration_ms"] = float(duration) if duration is not None else None
        mark = extra.get(OFFLOAD_MARK)
        if isinstance(mark, dict):
            fields.update(offloaded=True, total_chars=mark.get("total_chars"))
        fields["decision"] = extra.get(DECISION_KEY)
        fields["grant"] = extra.get(GRANT_KEY)
    return MessageView(**fields)


def turn_starts(messages: Sequence[MessageView]) -> list[int]:
    """Where each of the person's turns starts (turn n at `[n - 1]`), summaries skipped."""
    return [i for i, m in enumerate(messages) if m.role == "user" and not m.summary]
