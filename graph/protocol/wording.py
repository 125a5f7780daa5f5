"""The words for decisions and outcomes, one table for every front end, the decision
log, exports and late answers' refusals: a log row never shows a raw value.
"""

from __future__ import annotations

# What a decision (or an outcome answer) did, in the past tense.
DECIDED: dict[str, str] = {
    "approve": "approved",
    "edit": "approved with edits",
    "reject": "rejected",
    "respond": "answered instead",
    "run_again": "run again",
    "mark_failed": "marked as failed",
    "auto_approve": "auto-approved",
    "always_allowed": "always allowed",
    "grant": "always allow granted",
    "revoke": "always allow withdrawn",
}

# What an answer will do, for a person to confirm before it is sent.
WILL_DO: dict[str, str] = {
    "approve": "approve",
    "edit": "run with edited arguments",
    "reject": "reject",
    "respond": "answer instead",
    "run_again": "run it again",
    "mark_failed": "mark it as failed",
}

# How a run ended (RunStatus), where a front end says it in words.
RUN_ENDED: dict[str, str] = {
    "completed": "done",
    "awaiting_approval": "waiting for your decision",
    "cancelled": "stopped by you",
    "stopped": "stopped",
    "failed": "failed",
    "interrupted": "interrupted",
}


def decided(decision: str) -> str:
    """`DECIDED`'s word for `decision`; an unknown one with its underscores as spaces."""
    return DECIDED.get(decision, decision.replace("_", " "))
