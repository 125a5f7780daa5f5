"""The agent's state: the conversation plus the explicit keys that steer a run."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage, ToolCall
from langgraph.channels.delta import DeltaChannel
from typing_extensions import TypedDict

from graph.message_merge import merge_messages


def add_grants(left: list[dict[str, Any]] | None, right: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Append "always allow" grants, keeping each (tool, pattern) once."""
    merged = list(left or [])
    for grant in right or []:
        if grant not in merged:
            merged.append(grant)
    return merged


def add_usage(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    """Thread totals of token usage (and cost where known)."""
    total = dict(left or {})
    for key, value in (right or {}).items():
        total[key] = total.get(key, 0) + value
    return total


# Updates of the messages channel between full snapshots. Reads rebuild the list
# from the writes since the last snapshot, and deserialising 1,000 messages costs
# about the same from one snapshot blob as from their write rows, so snapshots buy
# little on reads while each one costs the whole list on disk (bench/: the sweep in
# BENCHMARKS.md). LangGraph still snapshots every 5,000 super-steps.
MESSAGES_SNAPSHOT_FREQUENCY = 100_000


class AgentState(TypedDict):
    # A DeltaChannel: each checkpoint stores only the messages its step added, not
    # the whole list (which made storage grow with the square of the thread length).
    messages: Annotated[list[AnyMessage], DeltaChannel(merge_messages, snapshot_frequency=MESSAGES_SNAPSHOT_FREQUENCY)]
    # "Always allow this tool (pattern) in this thread", granted while approving.
    grants: NotRequired[Annotated[list[dict[str, Any]], add_grants]]
    # Per-run counters, reset when a new message starts a run: `run_message_id` is the
    # latest user message the current run has seen (graph/agent.py `_fresh_run`).
    run_message_id: NotRequired[str | None]
    run_model_calls: NotRequired[int]
    run_usage: NotRequired[dict[str, float]]
    usage: NotRequired[Annotated[dict[str, float], add_usage]]
    # Flow control set by hooks or the runner, never guessed from the messages:
    # `stop_run` ends the run with a reason shown to the user; `stop_kind` says why
    # ("stopped" by a hook or a limit, "cancelled" by the person); `continue_run`
    # keeps the agent going from `on_exit`.
    stop_run: NotRequired[str | None]
    stop_kind: NotRequired[str | None]
    continue_run: NotRequired[bool]
    # Extra system text for the next model call only (e.g. the date); not history.
    model_context: NotRequired[dict[str, str]]
    # Hooks' own bookkeeping, one entry per hook (e.g. how often `on_exit` nudged):
    # `hook_run` is reset when a new message starts a run, `hook_thread` never is.
    hook_run: NotRequired[dict[str, Any]]
    hook_thread: NotRequired[dict[str, Any]]


class ToolTask(TypedDict):
    """What one `run_tool` task gets through `Send`: a call and how to treat it."""

    call: ToolCall
    # run: execute; deny / skip: answer with an error without running.
    mode: str
    note: NotRequired[str | None]
    # Whether the run goes on to the model when this task is done: false for free
    # calls that run beside a review, which moves the run on itself once answered.
    moves_on: NotRequired[bool]
