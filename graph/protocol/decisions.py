"""A person's decision on a paused call, as the decision log keeps it (the audit
record front ends show: who decided what, when, from where, with which edits)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DecisionRecord:
    """One person's answer for one call."""

    thread_id: str
    # Which question was answered: "review" (the approval card) or "outcome:N" (the
    # outcome of attempt N of a call a crash cut off). One row per question and call.
    question: str
    tool_call_id: str
    tool: str
    # approve | edit | reject | respond | run_again | mark_failed | auto_approve
    decision: str
    args: dict[str, Any]  # what runs (for an edit: the edited arguments)
    requested_args: dict[str, Any] | None = None  # what the model asked, when edited
    message: str | None = None  # a reason, a response, a note
    # "always allow" granted with this approval: "*" for the tool, else a glob.
    always_allow: str | None = None
    source: str | None = None  # the front end: web, terminal, api, langgraph-server …
    actor: str | None = None  # who: the OS user, a configured name, the server's user
    decided_at: float = 0.0

    @property
    def runs(self) -> bool:
        return self.decision in ("approve", "edit", "run_again", "auto_approve")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
