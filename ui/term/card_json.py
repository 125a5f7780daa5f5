"""A pending request as `--json` prints it, without rich: `pending --json` of 10,000
cards need not import the terminal's drawing (issue 58)."""

from __future__ import annotations

from typing import Any

from gatehouse.graph import Approval, OutcomeUnknown, Pause


def pending_rows(pending: Approval) -> list[dict[str, Any]]:
    """The calls of a request, numbered from 1 as `--call N` expects."""
    return [
        {
            "call": i,
            "name": a.name,
            "args": a.args,
            "risk": a.risk,
            "tool_call_id": a.tool_call_id,
            "allowed": pending.allowed(i - 1),
            "preview": a.preview,
        }
        for i, a in enumerate(pending.actions, start=1)
    ]


def pending_json(pending: Pause) -> dict[str, Any]:
    """The pending request for `--json`: an outcome-unknown pause has no calls, and the
    interrupted call under `outcome_unknown`."""
    head = {"interrupt_id": pending.interrupt_id, "kind": pending.kind}
    if not isinstance(pending, OutcomeUnknown):
        return head | {"calls": pending_rows(pending)}
    return head | {
        "calls": [],
        "outcome_unknown": pending.call.to_dict(),
        "allowed": pending.allowed,
        "description": pending.request.description,
    }


__all__ = ["pending_json", "pending_rows"]
