"""Every tool call in a thread gets an id of its own, where the model's reply enters
the state, before the policy, the review, the events or the storage see it.

Models and servers repeat call ids: LiteLLM's mock calls are all `call_mock_1`, some
servers number each reply's calls from `call_0`, and a reply may even carry one id
twice. Everything downstream pairs a call with its answer, its decision and its
journal row by id, so a repeated id would pin one call's result on another (and, were
decisions found by id alone, its approval). A call whose id the thread already holds
(or an earlier call of the same reply) is renamed here; the model's own id is kept in
`additional_kwargs[ORIGINAL_IDS_KEY]` (new id -> model's id).

A repeat is an id the history holds, one the thread's decision log or journal holds
(older history a compaction dropped; a reply generated again after a replay from a
checkpoint before the model answered: a new reply is a new call, never one that
inherits the old call's approval or result), or an earlier call of the same reply.
The new id is random and the tool calls and their ToolMessages both carry it, so the
history sent back to the provider stays paired (it only needs ids that are unique
and match).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from graph.agent.prefix_memo import PrefixMemo

# additional_kwargs key on an AIMessage: {new call id: the id the model gave}.
ORIGINAL_IDS_KEY = "gatehouse_original_call_ids"


def ids_in(messages: Iterable[AnyMessage]) -> set[str]:
    """Every tool-call id the messages hold: calls (valid or not) and answers."""
    seen: set[str] = set()
    add = seen.add
    # Once per model call over the whole history: a plain loop, no list or generator
    # per message.
    for m in messages:
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                if c.get("id"):
                    add(id_of(c))
            for bad in m.invalid_tool_calls:
                if bad.get("id"):
                    add(id_of(bad))
        elif isinstance(m, ToolMessage):
            add(m.tool_call_id)
    return seen


# The ids of a history, carried from one model call to the next (prefix_memo.py): a
# turn adds a few messages to a history of hundreds.
_history_ids: PrefixMemo[frozenset[str]] = PrefixMemo(
    frozenset(), lambda ids, more: ids | ids_in(more)
)


def fresh_call_ids(
    reply: AIMessage,
    history: Sequence[AnyMessage],
    held: Sequence[AnyMessage] = (),
    logged: Callable[[str], bool] | None = None,
) -> AIMessage:
    """`reply` with every call id that repeats one in the thread replaced by an id of
    its own; the reply itself when none repeats. Repeats are ids in the history (or
    held input), earlier in the same reply, or, through `logged`, ids the thread's
    decision log or journal already hold (history a compaction dropped, a branch
    replayed from before the model answered: a new reply is a new call, asked anew)."""
    calls = [*reply.tool_calls, *reply.invalid_tool_calls]
    if not calls:
        return reply  # nothing to rename (a reply that only answers): no scan of the history
    taken = set(_history_ids(history))
    taken |= ids_in(held)
    renamed: dict[int, str] = {}  # position in the reply's calls -> new id
    for i, call in enumerate(calls):
        old = call.get("id")
        if old and old not in taken and not (logged is not None and logged(old)):
            taken.add(old)
            continue
        new = _new_id(taken)
        taken.add(new)
        renamed[i] = new
    if not renamed:
        return reply
    originals = dict(reply.additional_kwargs.get(ORIGINAL_IDS_KEY) or {})
    valid = len(reply.tool_calls)
    tool_calls = [dict(c) for c in reply.tool_calls]
    invalid = [dict(c) for c in reply.invalid_tool_calls]
    for i, new in renamed.items():
        target = tool_calls[i] if i < valid else invalid[i - valid]
        originals[new] = target.get("id")
        target["id"] = new
    kwargs: dict[str, Any] = {**reply.additional_kwargs, ORIGINAL_IDS_KEY: originals}
    # The raw OpenAI form, where kept, must not contradict the calls (positions match).
    raw = kwargs.get("tool_calls")
    if isinstance(raw, list) and len(raw) == valid:
        kwargs["tool_calls"] = [
            {**c, "id": tool_calls[i]["id"]} if isinstance(c, dict) else c
            for i, c in enumerate(raw)
        ]
    return reply.model_copy(
        update={
            "tool_calls": tool_calls,
            "invalid_tool_calls": invalid,
            "additional_kwargs": kwargs,
        }
    )


def _new_id(taken: set[str]) -> str:
    # The shape OpenAI-compatible servers accept back (letters, digits, underscore).
    while (new := f"call_{uuid.uuid4().hex[:24]}") in taken:
        pass
    return new


def id_of(call: Any) -> str:
    """A call's id as a string: every call the graph handles has one (given above, where
    the reply enters the state); LangChain types it optional."""
    return call["id"] or ""
