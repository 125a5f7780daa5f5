"""A person's decision on a paused call, as the decision log keeps it (the audit
record front ends show: who decided what, when, from where, with which edits)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from gatehouse.graph.protocol.wording import decided

AUTO_APPROVE = "auto_approve"  # a gated call ran because auto-approve was on
ALL_TOOLS = "*"  # the tool of a grant of every tool: the thread's auto-approve switch
GRANT_QUESTION = "grant"
GRANT, REVOKE = "grant", "revoke"
ALWAYS_ALLOWED = "always_allowed"  # ran without asking under a standing grant
STANDING_QUESTION = "standing"
# A thread's life begins anew: deleted, imported, or created by a LangGraph Server
# user (the actor owns it). The gate acts on nothing the log holds before it.
LIFE_QUESTION = "life"
THREAD_DELETED, HISTORY_IMPORTED = "thread_deleted", "history_imported"
THREAD_CREATED = "thread_created"


def grant_label(tool: str, pattern: str | None) -> str:
    """A grant as people read it (and `gatehouse revoke` takes it): "write_file",
    "write_file:notes/*.md", or "*" for the auto-approve switch."""
    if tool == ALL_TOOLS:
        return ALL_TOOLS
    return tool if pattern is None else f"{tool}:{pattern}"


@dataclass(frozen=True)
class StandingGrant:
    """An "always allow" in force in a thread, who gave it, when, from where."""

    thread_id: str
    tool: str
    pattern: str | None
    granted_at: float
    source: str | None = None
    actor: str | None = None

    @property
    def label(self) -> str:
        return grant_label(self.tool, self.pattern)

    @property
    def described(self) -> str:
        if self.tool == ALL_TOOLS:
            return "auto-approve: every call that would ask runs without asking"
        where = (
            f" where its argument matches {self.pattern}" if self.pattern else " (any arguments)"
        )
        return f"always allow {self.tool}{where}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "grant": self.label, "described": self.described}


def canonical_args(args: Any) -> str:
    """Arguments as canonical JSON (keys sorted): what two calls must share to be one."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def same_call(tool: Any, args: Any, other_tool: Any, other_args: Any) -> bool:
    return tool == other_tool and canonical_args(args) == canonical_args(other_args)


@dataclass(frozen=True)
class DecisionRecord:
    """One person's answer for one call."""

    thread_id: str
    question: str  # "review" (the card) or "outcome:N" (attempt N after a crash)
    tool_call_id: str
    tool: str
    decision: str  # approve, edit, reject ... (wording.py); any string is kept
    args: dict[str, Any]  # what runs (for an edit: the edited arguments)
    requested_args: dict[str, Any] | None = None  # what the model asked, when edited
    message: str | None = None  # a reason, a response, a note
    # "always allow" granted with this approval: "*" for the tool, else a glob; a later
    # "revoke" of the same tool and value withdraws it.
    always_allow: str | None = None
    source: str | None = None  # the front end: web, terminal, api, langgraph-server …
    actor: str | None = None  # who: the OS user, a configured name, the server's user
    decided_at: float = 0.0
    # The request answered: the interrupt's id (None for auto-approvals and grants).
    request_id: str | None = None

    def binds(self, call: Mapping[str, Any], *, as_run: bool = False) -> bool:
        """Whether this record decided exactly `call`: id, tool and canonical arguments
        (`as_run`: an edit's; else those the person was asked about)."""
        args = self.args if as_run or self.requested_args is None else self.requested_args
        return self.tool_call_id == call.get("id") and same_call(
            self.tool, args, call.get("name"), call.get("args")
        )

    @property
    def runs(self) -> bool:
        return self.decision in ("approve", "edit", "run_again", "auto_approve")

    def changes(self) -> dict[str, dict[str, Any]]:
        """For an edit: each changed argument, `{"requested": …, "ran": …}`."""
        if self.requested_args is None:
            return {}
        keys = sorted(set(self.requested_args) | set(self.args))
        return {
            k: {"requested": self.requested_args.get(k), "ran": self.args.get(k)}
            for k in keys
            if self.requested_args.get(k, _MISSING) != self.args.get(k, _MISSING)
        }

    def diff(self) -> str | None:
        """For an edit, what changed: a unified diff for text over lines, else `- key: old`
        / `+ key: new`; None when nothing was edited."""
        changed = self.changes()
        if not changed:
            return None
        parts: list[str] = []
        for key, sides in changed.items():
            old, new = sides["requested"], sides["ran"]
            if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
                lines = difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=f"requested {key}",
                    tofile=f"ran {key}",
                )
                text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
                parts.append(text.rstrip("\n"))
            else:
                parts.append(
                    f"- {key}: {_show(old, key in (self.requested_args or {}))}\n"
                    f"+ {key}: {_show(new, key in self.args)}"
                )
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.requested_args is not None:
            data["changes"] = self.changes()
            data["diff"] = self.diff()
        return data


_MISSING = object()


def _show(value: Any, present: bool) -> str:
    return json.dumps(value, ensure_ascii=False, default=str) if present else "(not given)"


def who_decided(records: list[DecisionRecord]) -> str | None:
    """The latest answer among `records` (newest first): "approved write_file by alice
    via web at 2026-11-24 23:40:02 UTC"; None when nothing was answered."""
    import time

    for r in records:
        if r.question == "review" or r.question.startswith("outcome:"):
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(r.decided_at))
            return (
                f"{decided(r.decision)} {r.tool} by {r.actor or 'someone unnamed'} "
                f"via {r.source or 'an unnamed front end'} at {when}"
            )
    return None
