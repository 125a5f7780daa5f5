"""A pause closes only by a decision: a tool message in a client's input never answers
an open call (Agent Chat UI sends a made-up "Successfully handled tool call." when a
person types while a card shows; an SDK client could send "exit code 0" for an
`rm -rf` that never ran). Beside other messages such answers are dropped (the rest
held until the calls are decided, a notice says so); alone, in a `Command(update=...)`
or a state edit they are refused (`ClientAnswerRefused`). A tool message for a call
the same input makes (a seeded conversation) passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, StateSnapshot, StateUpdate

from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.history import open_turn_before_new_input, unanswered
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import DecisionError

# The dropped answers' ids, in the run's config (model_node.py shows the notice).
DROPPED_KEY = "gatehouse_dropped_answers"


class ClientAnswerRefused(DecisionError):
    """Client input tried to answer an open tool call with a tool message."""


def _as_message(item: Any) -> BaseMessage | None:
    try:
        return convert_to_messages([item])[0]
    except (ValueError, TypeError, NotImplementedError):
        return None  # not a message: LangGraph refuses it as usual


def _messages_of(values: Any) -> list[Any]:
    found = values.get("messages") if isinstance(values, Mapping) else None
    if found is None:
        return []
    return list(found) if isinstance(found, list | tuple) else [found]


def _answered(items: Iterable[Any]) -> list[tuple[Any, str]]:
    """(item, call id) of each tool message among `items`."""
    return [(i, m.tool_call_id) for i in items if isinstance(m := _as_message(i), ToolMessage)]


def carries_tool_messages(input: Any) -> bool:
    """Whether run input holds a tool message at all (cheap: the state is read only then)."""
    values = input.update if isinstance(input, Command) else input
    return bool(_answered(_messages_of(values)))


def _refusal(open_calls: Mapping[str, str], ids: Sequence[str], how: str) -> ClientAnswerRefused:
    names = ", ".join(f"`{open_calls[cid]}` (call {cid})" for cid in ids)
    return ClientAnswerRefused(
        f"{how} a tool message for {names}, which waits for a person's decision; "
        "a tool message never answers an open call. Nothing changed: the call still waits. "
        'Answer the pause with {"decisions": [...]} (Command(resume=...)).'
    )


def _open_calls(state_values: Mapping[str, Any]) -> dict[str, str]:
    return {cid: c["name"] for c in unanswered(state_values) if (cid := c.get("id"))}


def screen_run_input(
    input: Any, config: RunnableConfig, state_values: Mapping[str, Any]
) -> tuple[Any, RunnableConfig]:
    """Run input and its config with answers to open calls dropped (or refused)."""
    open_calls = _open_calls(state_values)
    values = input.update if isinstance(input, Command) else input
    items = _messages_of(values)
    bad = [(item, cid) for item, cid in _answered(items) if cid in open_calls]
    if not bad:
        return input, config
    ids = [cid for _, cid in bad]
    dropped = {id(item) for item, _ in bad}
    kept = [item for item in items if id(item) not in dropped]
    if isinstance(input, Command) or not kept:
        raise _refusal(open_calls, ids, "The input was only" if not kept else "The command carried")
    conf = {**(config.get("configurable") or {}), DROPPED_KEY: ids}
    return {**(values or {}), "messages": kept}, {**config, "configurable": conf}


def edit_answers(updates: Iterable[Any]) -> list[str]:
    """The call ids of the tool messages a state edit adds (cheap: no state read)."""
    ids: list[str] = []
    for values in updates:
        for one in values if isinstance(values, list) else [values]:
            inner = one[0] if isinstance(one, tuple | list) and one else one
            ids += [cid for _, cid in _answered(_messages_of(inner))]
    return ids


def refuse_answering_edit(ids: Sequence[str], state_values: Mapping[str, Any]) -> None:
    """Refuse a state edit whose tool messages (`ids`, edit_answers) answer open calls."""
    open_calls = _open_calls(state_values)
    if bad := [c for c in ids if c in open_calls]:
        raise _refusal(open_calls, bad, "The edit added")


def announce_dropped(config: RunnableConfig) -> None:
    if ids := (config.get("configurable") or {}).get(DROPPED_KEY):
        emit(
            ev.Notice,
            text=(
                f"A tool message in the input for call {', '.join(map(str, ids))} was ignored: only a "
                "person's decision answers a paused call. Your message waits until it is decided."
            ),
            source="gate",
        )


# LangGraph drops a pending interrupt on any state edit. After an edit of a paused
# thread with open calls, it is routed as the model's turn (an edit as another node
# routes nowhere) and the pure steps that ask again run at once, stopping before more.
REPAUSE: dict[str, Any] = {
    "interrupt_after": ["review"],
    "interrupt_before": ["run_tool", "finish", "before_tool"],
}
AS_MODEL = [[StateUpdate({}, "model", None)]]


def _open_after_edit(after: StateSnapshot) -> bool:
    messages = after.values.get("messages") or []
    return bool(unanswered(after.values)) or open_turn_before_new_input(messages) is not None


def _asks_next(after: StateSnapshot) -> bool:
    return after.next == ("review",) or (after.next == ("model",) and _open_after_edit(after))


def keep_pause(graph: Pregel, paused_before: bool, done: RunnableConfig) -> None:
    """After an edit (`done`: its checkpoint) of a thread that was paused: ask again."""
    if not paused_before or (after := graph.get_state(done)).interrupts:
        return
    if not after.next and _open_after_edit(after):
        done = CompiledStateGraph.bulk_update_state(graph, done, AS_MODEL)
        after = graph.get_state(done)
    if _asks_next(after):
        for _ in graph.stream(None, done, **REPAUSE):
            pass


async def akeep_pause(graph: Pregel, paused_before: bool, done: RunnableConfig) -> None:
    """`keep_pause` for the server's event loop."""
    if not paused_before or (after := await graph.aget_state(done)).interrupts:
        return
    if not after.next and _open_after_edit(after):
        done = await CompiledStateGraph.abulk_update_state(graph, done, AS_MODEL)
        after = await graph.aget_state(done)
    if _asks_next(after):
        async for _ in graph.astream(None, done, **REPAUSE):
            pass
