"""The agent's state keys read outside the agent (the store reads checkpoints by them
without LangGraph), and how a finished run's state says it ended; test_architecture
checks each is a key of `AgentState`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

MESSAGES = "messages"  # the DeltaChannel whose head the store materialises
USAGE = "usage"
RUN_STATUS = "run_status"  # how the run ended, written by the node that ends it
STOP_REASON = "stop_reason"  # why the run stopped (shown to the person)
STOP_KIND = "stop_kind"  # who stopped it
CANCELLED: Final = "cancelled"  # the STOP_KIND of a run the person cancelled


def stop_status(kind: str | None) -> Literal["cancelled", "stopped"]:
    return CANCELLED if kind == CANCELLED else "stopped"


def ended_as(values: Mapping[str, Any], updated: Collection[str]) -> str:
    """How a run ended, from its last checkpoint's state (`updated`: the keys its step
    wrote): the ending node's mark, else "stopped" / "cancelled", else "completed"."""
    if RUN_STATUS in updated and values.get(RUN_STATUS):
        return str(values[RUN_STATUS])
    if values.get(STOP_REASON):
        return stop_status(values.get(STOP_KIND))
    return "completed"
