"""The doom-loop guard: the N-th identical call in a row of this run (default 3; 0: off)
gets a nudge instead of running; one more stops the run. It runs in the model node,
so it holds for every client and costs no step of its own."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall

DEFAULT_DOOM_LOOP_THRESHOLD = 3


@dataclass(frozen=True)
class Repeat:
    call: ToolCall
    times: int  # how many times in a row, this call included


def _key(call: ToolCall) -> tuple[str, str]:
    return call["name"], json.dumps(call.get("args") or {}, sort_keys=True, default=str)


def repeats(history: Sequence[AnyMessage], reply: AIMessage, threshold: int) -> list[Repeat]:
    """The reply's calls that reach the threshold (in the reply's order)."""
    if threshold <= 0 or not reply.tool_calls:
        return []
    # This run's tool calls before the reply, oldest first.
    run = list(takewhile(lambda m: not isinstance(m, HumanMessage), reversed(history)))
    calls = [_key(c) for m in reversed(run) if isinstance(m, AIMessage) for c in m.tool_calls]
    found: list[Repeat] = []
    for call in reply.tool_calls:
        key = _key(call)
        times = 1 + len(list(takewhile(key.__eq__, reversed(calls))))
        calls.append(key)
        if times >= threshold:
            found.append(Repeat(call, times))
    return found


def stop_reason(repeat: Repeat) -> str:
    return (
        f"Stopped: the agent called {repeat.call['name']} with the same arguments {repeat.times} times in a "
        "row (a loop). Send a message to continue."
    )


def notice(repeat: Repeat) -> str:
    return (
        f"The agent called {repeat.call['name']} with the same arguments {repeat.times} times in a row; "
        "the call was not run and the agent was asked to try something else."
    )
