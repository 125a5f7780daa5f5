"""The agent's state: the conversation, the keys that steer a run, and who may set them
(`InputState`: all a client may send; `HOOK_KEYS`: what a hook may write)."""

# No `from __future__ import annotations`: LangGraph reads these hints on each build,
# and string annotations are evaluated again each time (~0.8 ms of a first open).
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage, ToolCall
from langgraph.channels.delta import DeltaChannel
from typing_extensions import TypedDict

from gatehouse.graph.agent.message_merge import merge_messages
from gatehouse.graph.protocol.events import RunStatus
from gatehouse.graph.protocol.state_keys import STOP_KIND, STOP_REASON


def add_grants(
    left: list[dict[str, Any]] | None, right: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
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


# Reading 1,000 messages from a snapshot costs about what their write rows cost, and
# each snapshot the whole list on disk (BENCHMARKS.md).
MESSAGES_SNAPSHOT_FREQUENCY = 100_000

# Each checkpoint stores only the messages its step added (not the square of the length).
Messages = Annotated[
    list[AnyMessage], DeltaChannel(merge_messages, snapshot_frequency=MESSAGES_SNAPSHOT_FREQUENCY)
]


class InputState(TypedDict):
    """What a client may send: messages (strings, message dicts, content blocks)."""

    messages: Messages


class AgentState(TypedDict):
    messages: Messages
    # "Always allow this tool (pattern) in this thread", granted while approving.
    grants: NotRequired[Annotated[list[dict[str, Any]], add_grants]]
    # Per-run counters; `run_message_id`: the latest user message the run has seen.
    run_message_id: NotRequired[str | None]
    run_model_calls: NotRequired[int]
    run_usage: NotRequired[dict[str, float]]
    usage: NotRequired[Annotated[dict[str, float], add_usage]]
    # Flow control: `stop_reason` ends the run, `stop_kind` says who (run_end.py).
    stop_reason: NotRequired[str | None]
    stop_kind: NotRequired[str | None]
    continue_run: NotRequired[bool]
    rerun_llm: NotRequired[bool | str]
    # How the run ended, by the node that ends it (a pause needs none).
    run_status: NotRequired[RunStatus | None]
    # Input that came while calls were open: held out until each is answered (model_node.py).
    held_messages: NotRequired[list[AnyMessage]]
    # Extra system text for the next model call only (e.g. the date).
    model_context: NotRequired[dict[str, str]]
    # Hooks' own bookkeeping, one entry per hook: `hook_run` is reset each run.
    hook_run: NotRequired[dict[str, Any]]
    hook_thread: NotRequired[dict[str, Any]]


class ToolTask(TypedDict):
    """What one `run_tool` task gets through `Send`: a call and how to treat it."""

    call: ToolCall
    # deny / skip / invalid: an error, not run; reject / respond: a person's answer.
    mode: Literal["run", "deny", "skip", "invalid", "reject", "respond"]
    note: NotRequired[str | None]
    # False beside a review, which moves the run on itself once answered.
    moves_on: NotRequired[bool]
    # "auto_approve" claims an auto-approval: run_tool asks the gate again and records it.
    decision: NotRequired[str | None]
    # The grant a call runs under: set by run_tool from the decision log, never a Send.
    grant: NotRequired[str | None]
    # Decided and journaled (an older checkpoint replayed): the journaled result.
    replayed: NotRequired[bool]


# Reset when a new user message starts a run; kept across its pauses and retries.
RUN_KEYS: dict[str, Any] = {
    "run_model_calls": 0,
    "run_usage": {},
    "stop_reason": None,
    "stop_kind": None,
    "continue_run": False,
    "rerun_llm": False,
    "hook_run": {},
}

# The keys that steer the flow, the ones merged per key, and all a hook may write.
FLOW_KEYS = frozenset({"stop_reason", "stop_kind", "continue_run", "rerun_llm"})
MERGED_KEYS = frozenset({"model_context", "hook_run", "hook_thread"})
HOOK_KEYS = FLOW_KEYS | MERGED_KEYS | {"messages", "usage", "run_usage"}
STOP_KEYS = (STOP_REASON, STOP_KIND)
