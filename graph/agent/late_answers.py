"""An answer after the question was decided elsewhere: LangGraph takes a resume of a
thread that no longer waits as a no-op "success". It is refused instead, with what
became of the request ("already decided: `write_file` approved by ana via terminal").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import PendingWrite
from langgraph.types import Command, StateSnapshot

from gatehouse.graph.protocol.decisions import DecisionRecord
from gatehouse.graph.protocol.errors import StaleDecision
from gatehouse.graph.protocol.wording import decided
from gatehouse.graph.store.langgraph_private import CONTROL_WRITES, INTERRUPT, NULL_TASK_ID


def is_answer(input: Any) -> bool:
    return isinstance(input, Command) and input.resume is not None


def has_interrupts(writes: Sequence[PendingWrite], *, live: bool) -> bool:
    """Whether `get_state(...).interrupts` lists any, from the pending writes alone
    (langgraph/pregel/_task_status.py's rules; building the state decodes every message):
    one written by a task (not input), unfinished when `live` (the latest checkpoint)."""
    finished = {w[0] for w in writes if w[1] not in CONTROL_WRITES}
    return any(
        # An INTERRUPT write holds the task's interrupts (a list; anything else is one).
        (bool(value) if isinstance(value, Sequence) else True)
        for task_id, channel, value in writes
        if channel == INTERRUPT and task_id != NULL_TASK_ID and not (live and task_id in finished)
    )


def late_answer_error(
    thread_id: str, state: StateSnapshot, records: Sequence[DecisionRecord]
) -> StaleDecision | None:
    """The refusal for an answer to `state`; None when a question is pending."""
    if state.interrupts or not state.values:
        return None
    # The calls of the latest turn that made any: what the late answer was about.
    messages = state.values.get("messages") or []
    turn = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls), None)
    calls = {c["id"] for c in turn.tool_calls} if turn is not None else set()
    said: dict[str, str] = {}
    for record in reversed(records):  # the latest decision of each call
        answers_a_question = record.question == "review" or record.question.startswith("outcome")
        if answers_a_question and record.tool_call_id in calls and record.tool_call_id not in said:
            named = (("by", record.actor), ("via", record.source))
            who = " ".join(f"{how} {name}" for how, name in named if name) or "elsewhere"
            said[record.tool_call_id] = f"`{record.tool}` {decided(record.decision)} {who}"
    already = f": already decided — {'; '.join(reversed(said.values()))}." if said else ""
    return StaleDecision(
        f"thread {thread_id} is not waiting for a decision; your answer was not used{already}"
    )
