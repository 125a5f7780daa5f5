"""The agent's state keys read outside the agent, and how a finished run's state says
it ended: the store reads checkpoints by them without importing the agent (or
LangGraph). tests/test_architecture.py checks each is a key of `AgentState`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

MESSAGES = "messages"  # the DeltaChannel whose head the store materialises
USAGE = "usage"
RUN_STATUS = "run_status"  # how the run ended, written by the node that ends it
# Why the run stopped (shown to the person), and who stopped it.
STOP_REASON = "stop_reason"
STOP_KIND = "stop_kind"
# The `STOP_KIND` of a run the person cancelled.
CANCELLED: Final = "cancelled"


def stop_status(kind: str | None) -> Literal["cancelled", "stopped"]:
    """How a stopped run ended: cancelled by the person, or stopped (a hook, a limit)."""
    return CANCELLED if kind == CANCELLED else "stopped"


def ended_as(values: Mapping[str, Any], updated: Collection[str]) -> str:
    """How a run ended, from its last checkpoint's state (`updated`: the keys its step
    wrote): the ending node's mark, else "stopped" / "cancelled", else "completed"."""
    if RUN_STATUS in updated and values.get(RUN_STATUS):
        return str(values[RUN_STATUS])
    if values.get(STOP_REASON):
        return stop_status(values.get(STOP_KIND))
    return "completed"
