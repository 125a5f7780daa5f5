"""The agent's state keys that are read outside the agent, and how a finished run's
state says it ended.

The agent (graph/agent/state.py) declares its state under these names; the store
reads stored checkpoints by them (the thread index's status, a thread's title,
transcript and usage), whoever ran the graph, without importing the agent: the
terminal's read-only commands read threads without loading LangGraph, which the
agent needs. tests/test_architecture.py checks that each name is a key of
`AgentState` and that no store module spells an agent state key itself.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

# The conversation: the DeltaChannel whose head the store materialises.
MESSAGES = "messages"
# Token usage totals of the thread.
USAGE = "usage"
# How the run ended, written by the node that ends it.
RUN_STATUS = "run_status"
# Why the run stopped (shown to the person), and who stopped it.
STOP_REASON = "stop_reason"
STOP_KIND = "stop_kind"
# The `STOP_KIND` of a run the person cancelled.
CANCELLED: Final = "cancelled"


def stop_status(kind: str | None) -> Literal["cancelled", "stopped"]:
    """How a stopped run ended: cancelled by the person, or stopped (a hook, a limit)."""
    return CANCELLED if kind == CANCELLED else "stopped"


def ended_as(values: Mapping[str, Any], updated: Collection[str]) -> str:
    """How a run ended, from the state of the checkpoint it ended at (`updated`: the
    keys that checkpoint's step wrote): the mark of the node that ended it, else
    "stopped" / "cancelled" when a stop reason is set, else "completed"."""
    if RUN_STATUS in updated and values.get(RUN_STATUS):
        return str(values[RUN_STATUS])
    if values.get(STOP_REASON):
        return stop_status(values.get(STOP_KIND))
    return "completed"
