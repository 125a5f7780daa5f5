"""Every tool call in a thread gets an id of its own, where the reply enters the state.

Models repeat call ids (LiteLLM's mocks are all `call_mock_1`, some servers number
each reply from `call_0`), and a call is paired with its answer, decision and journal
row by id: a repeat would pin one call's result (or approval) on another. An id the
history, the decision log, the journal or an earlier call of the reply holds is
replaced by a random one (the model's is kept in `additional_kwargs[ORIGINAL_IDS_KEY]`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from gatehouse.graph.agent.prefix_memo import PrefixMemo

# additional_kwargs key on an AIMessage: {new call id: the id the model gave}.
ORIGINAL_IDS_KEY = "gatehouse_original_call_ids"


def ids_in(messages: Iterable[AnyMessage]) -> set[str]:
    """Every tool-call id the messages hold: calls (valid or not) and answers."""
    seen: set[str] = set()
    add = seen.add
    # A plain loop over the whole history: no list or generator per message.
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


# The ids of a history, carried from one model call to the next (prefix_memo.py).
_history_ids: PrefixMemo[frozenset[str]] = PrefixMemo(
    frozenset(), lambda ids, more: ids | ids_in(more)
)


def fresh_call_ids(
    reply: AIMessage,
    history: Sequence[AnyMessage],
    held: Sequence[AnyMessage] = (),
    logged: Callable[[Sequence[str]], set[str]] | None = None,
) -> AIMessage:
    """`reply` with each repeated call id replaced; `logged`: which ids the log holds."""
    calls = [*reply.tool_calls, *reply.invalid_tool_calls]
    if not calls:
        return reply  # nothing to rename (a reply that only answers): no scan of the history
    taken = set(_history_ids(history))
    taken |= ids_in(held)
    new_ids = [cid for c in calls if (cid := c.get("id")) and cid not in taken]
    in_log = logged(new_ids) if logged is not None and new_ids else set()
    renamed: dict[int, str] = {}  # position in the reply's calls -> new id
    for i, call in enumerate(calls):
        old = call.get("id")
        if old and old not in taken and old not in in_log:
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
    """A call's id (every call has one, given above; LangChain types it optional)."""
    return call["id"] or ""
