"""The reducer of the messages `DeltaChannel`: `add_messages`, batching-invariant. It
keeps the id index of the lists it returned, so the usual append costs a dict copy
(LangGraph's rebuilds the thread's index on each of ~ten calls a turn)."""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from itertools import islice
from typing import Any

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from gatehouse.graph.store.langgraph_private import messages_delta_reducer

# Indexes of recently returned lists by id(list), the list held so its id stays unique.
_INDEX_SLOTS = 128
_COPY_PROBES = 8
_indexes: OrderedDict[int, tuple[list[AnyMessage], int, dict[str, int]]] = OrderedDict()
_lock = threading.Lock()


def message_index(state: list[AnyMessage]) -> dict[str, int]:
    """id -> position of `state`'s messages (read only: it serves every copy of the list)."""
    with _lock:
        hit = _indexes.get(id(state))
        # Same object and length: unchanged (lists from state are never edited in place).
        if hit is not None and hit[0] is state and hit[1] == len(state):
            return hit[2]
        if (index := _index_of_copy(state)) is not None:
            return index
    index = {m.id: i for i, m in enumerate(state) if m.id is not None}
    if len(state) > 16:
        # A thread read cold is merged into through copies of one list: index it once.
        _remember(state, index)
    return index


def _index_of_copy(state: list[AnyMessage]) -> dict[str, int] | None:
    """The index of a recent list of the very same messages (LangGraph hands reducers
    shallow copies; comparing identities costs far less than a new index)."""
    n = len(state)
    for kept, length, index in islice(reversed(_indexes.values()), _COPY_PROBES):
        if length == n and len(kept) == n and all(map(operator.is_, kept, state)):
            return index
    return None


def _remember(result: list[AnyMessage], index: dict[str, int]) -> None:
    with _lock:
        _indexes[id(result)] = (result, len(result), index)
        while len(_indexes) > _INDEX_SLOTS:
            _indexes.popitem(last=False)


def _with_stable_ids(state: list[AnyMessage], flat: list[Any]) -> list[Any]:
    """Tuples or strings (raw `graph.invoke` input) as messages with ids, from the history
    so far: a replay of the same writes (a DeltaChannel's read) gives the same ids."""
    out: list[Any] = []
    taken = {m.id for m in state if isinstance(m, BaseMessage)}
    for item in flat:
        msg = item if isinstance(item, BaseMessage) else convert_to_messages([item])[0]
        if msg.id is None:
            n = len(state) + len(out)
            while f"msg-{n}" in taken:
                n += 1
            msg = msg.model_copy(update={"id": f"msg-{n}"})
        taken.add(msg.id)
        out.append(msg)
    return out


def merge_messages(state: list[AnyMessage], writes: list[Any]) -> list[AnyMessage]:
    flat = [m for write in writes for m in (write if isinstance(write, list) else [write])]
    for i in range(len(flat) - 1, -1, -1):
        if isinstance(flat[i], RemoveMessage) and flat[i].id == REMOVE_ALL_MESSAGES:
            state, flat = [], flat[i + 1 :]
            break
    flat = [message_chunk_to_message(m) if isinstance(m, BaseMessageChunk) else m for m in flat]
    if any(not isinstance(m, BaseMessage) or m.id is None for m in flat):
        flat = _with_stable_ids(state, flat)
    # Every write is a message with an id by now.
    if not any(isinstance(m, RemoveMessage) for m in flat) and (
        not state or isinstance(state[0], BaseMessage)
    ):
        index = message_index(state)
        new_ids = [m.id for m in flat]
        if len(set(new_ids)) == len(new_ids) and not any(i in index for i in new_ids):
            result = [*state, *flat]
            if len(result) > 16:  # short lists rebuild their index for nothing
                grown = {mid: n for n, mid in enumerate(new_ids, start=len(state))}
                _remember(result, index | grown)
            return result
    return messages_delta_reducer(state, [flat])
