"""The materialised head: a thread's messages at its latest checkpoint, one row each,
kept current by the saver as checkpoints are written.

Why: the messages live in a `DeltaChannel`, so a checkpoint stores only what its step
added. Reading a thread in a process that has never seen it meant replaying every
ancestor's writes (one row fetch and one deserialisation per checkpoint, about six a
turn): cold reads grew with the thread's length. The head turns that into one indexed
range read, and the rows decode about ten times faster than LangGraph's serializer
(no pydantic validation: the fields were valid when the message was written).

Invariant: `gatehouse_heads` says "the rows of `gatehouse_head_messages` for this
(thread, namespace, channel) with `pos < count` are the channel's value at checkpoint
`checkpoint_id`". Both tables change only together, in the transaction that writes
a checkpoint, so the claim is always true. Checkpoints never change, so a head that
is not the latest checkpoint is still a true base: a reader walks from the checkpoint
it wants up to the head and applies the writes in between, or replays the history
when the head is not an ancestor (time travel). The head only ever speeds reads up.

Keeping it current costs a few rows a step: a step that appends messages (nearly
all) inserts one row per new message; anything else (a removal, an overwrite, a
branch from an older checkpoint by undo / fork / time travel) rewrites the rows once.

Row format (`type`, `data`): `gh-msg` for a message of a standard LangChain class
whose fields are plain data: msgpack of `[kind, fields, extra, fields_set]`, restored
into the class without validation; any other message: LangGraph's serializer, as
the checkpoint tables store it. `graph/store/plain.py` reads both without LangGraph.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from operator import is_
from typing import Any

import ormsgpack
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from graph.store.plain import PLAIN_MESSAGE

KINDS: dict[type, str] = {
    HumanMessage: "human",
    AIMessage: "ai",
    ToolMessage: "tool",
    SystemMessage: "system",
    ChatMessage: "chat",
    FunctionMessage: "function",
}
CLASSES: dict[str, type] = {kind: cls for cls, kind in KINDS.items()}

Row = tuple[str, bytes]
_set = object.__setattr__


class HeadUnreadable(ValueError):
    """Head rows that do not decode (damaged, or from an unknown version): the
    reader falls back to replaying the history."""


def _plain(value: Any) -> bool:
    """Only what msgpack gives back unchanged: dicts with str keys, lists, str, int,
    float, bool, None (not tuples, enums, str subclasses, datetimes ...)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return True
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if t is list:
        return all(_plain(v) for v in value)
    return False


def encode(message: Any, serde: Any) -> Row:
    kind = KINDS.get(type(message))
    if kind is not None and getattr(message, "__pydantic_private__", None) is None:
        fields, extra = message.__dict__, message.__pydantic_extra__
        if _plain(fields) and (extra is None or _plain(extra)):
            try:
                return PLAIN_MESSAGE, ormsgpack.packb([kind, fields, extra, sorted(message.__pydantic_fields_set__)])
            except (TypeError, ormsgpack.MsgpackEncodeError):
                pass  # e.g. an int too large for msgpack
    return serde.dumps_typed(message)  # type: ignore[no-any-return]


def decode(rows: Sequence[Row], serde: Any) -> list[Any]:
    """The messages of head rows, in order."""
    # Thousands of small objects at once: the collector would walk the heap several
    # times while they are built, for nothing (nothing here is garbage).
    enabled = gc.isenabled()
    gc.disable()
    try:
        out: list[Any] = []
        append = out.append
        for type_tag, data in rows:
            if type_tag == PLAIN_MESSAGE:
                kind, fields, extra, fields_set = ormsgpack.unpackb(data)
                cls = CLASSES[kind]
                message = cls.__new__(cls)
                _set(message, "__dict__", fields)
                _set(message, "__pydantic_extra__", extra)
                _set(message, "__pydantic_fields_set__", set(fields_set))
                _set(message, "__pydantic_private__", None)
                append(message)
            else:
                append(serde.loads_typed((type_tag, bytes(data))))
        return out
    except (KeyError, ValueError, TypeError, ormsgpack.MsgpackDecodeError) as exc:
        raise HeadUnreadable(str(exc)) from exc
    finally:
        if enabled:
            gc.enable()


def unchanged_prefix(before: Sequence[Any], after: Sequence[Any], written: int) -> int:
    """How many leading values `after` shares with `before` (the same objects): the
    rows from there on are (re)written. `written` is how many values the step wrote:
    when the list grew by exactly that much, every write was an append."""
    n = len(before)
    if n == 0:
        return 0
    if len(after) == n + written and after[0] is before[0] and after[n - 1] is before[n - 1]:
        return n
    if len(after) >= n and all(map(is_, before, after)):
        return n
    common = 0
    for old, new in zip(before, after, strict=False):
        if old is not new:
            break
        common += 1
    return common


def written_count(writes: Sequence[Any]) -> int:
    """How many values a list of channel writes carries (lists flatten, as in the reducer)."""
    return sum(len(v) if isinstance(v, list) else 1 for v in writes)


def is_message_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(m, BaseMessage) for m in value)
