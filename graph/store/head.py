"""The materialised head: a thread's messages at its latest checkpoint, in rows of up to
32, kept by the saver in each checkpoint's transaction. With a `DeltaChannel` a cold read
replayed every ancestor's writes; the head is one indexed range read, decoded ~10x faster
than LangGraph's serializer (no pydantic validation: the fields were valid when written).

Invariant: the `gatehouse_head_blocks` rows of a (thread, namespace, channel) hold its
value at `gatehouse_heads.checkpoint_id`; both change only together. A head that is not
the latest checkpoint is still a true base (checkpoints never change).

An append (nearly every step) extends the last rows; a removal, overwrite or branch
rewrites them once. A block is its messages' msgpack items concatenated: `[kind, fields,
extra, fields_set]` for a LangChain message of plain data (`fields_set` None when it names
every field), or `["~", type, bytes]` from LangGraph's serializer (plain.py reads both).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from operator import is_
from typing import Any

import ormsgpack
from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from gatehouse.graph.store.dialect import POSTGRES, Dialect, in_one, upsert
from gatehouse.graph.store.plain import BLOCK, SERIALIZED, block_items
from gatehouse.graph.store.plain import HEAD_KEY as _KEY

HEAD_TABLES = (
    """CREATE TABLE IF NOT EXISTS gatehouse_heads (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel))""",
    """CREATE TABLE IF NOT EXISTS gatehouse_head_blocks (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    pos INTEGER NOT NULL,
    n INTEGER NOT NULL,
    data {blob} NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, pos))""",
)


DELETE_HEAD = tuple(
    f"DELETE FROM {table} WHERE thread_id = ?"
    for table in ("gatehouse_heads", "gatehouse_head_blocks")
)
UPSERT_HEAD = upsert(
    "gatehouse_heads",
    ("thread_id", "checkpoint_ns", "channel", "checkpoint_id", "count"),
    ("thread_id", "checkpoint_ns", "channel"),
    update=("checkpoint_id", "count"),
)
# (checkpoint id, count, key..., parent id, parent count): the head moves only from the parent.
_MOVE = (
    f"UPDATE gatehouse_heads SET checkpoint_id = ?, count = ? WHERE {_KEY} "
    "AND checkpoint_id = ? AND count = ?"
)
MOVE_HEAD = f"{_MOVE} RETURNING 1"
# Postgres, a value computed from the writes the saver remembers: and only when the
# parent holds as many writes to the channel (thread, namespace, parent, channel, count).
MOVE_HEAD_KNOWN = (
    f"{_MOVE} AND (SELECT count(*) FROM checkpoint_writes w WHERE w.thread_id = ? "
    "AND w.checkpoint_ns = ? AND w.checkpoint_id = ? AND w.channel = ?) = ? RETURNING 1"
)
_DELETE_BLOCKS = f"DELETE FROM gatehouse_head_blocks WHERE {_KEY} AND pos >= ?"
_EXTEND_BLOCK = f"UPDATE gatehouse_head_blocks SET n = n + ?, data = CAST(data || ? AS {{blob}}) WHERE {_KEY} AND pos = ?"
_UPSERT_BLOCK = upsert(
    "gatehouse_head_blocks",
    ("thread_id", "checkpoint_ns", "channel", "pos", "n", "data"),
    ("thread_id", "checkpoint_ns", "channel", "pos"),
    update=("n", "data"),
)


# A head row: (block number, messages in it, its bytes).
Block = tuple[int, int, bytes]
# How the rows change: (an append to the last block, whole blocks, delete from).
RowChange = tuple[Block | None, list[Block], int]


def write_rows(cur: Any, dialect: Dialect, key: tuple[str, str, str], change: RowChange) -> None:
    """Apply `change` to the head rows of `key` (thread, namespace, channel)."""
    extend, whole, delete_from = change
    if delete_from >= 0:
        cur.execute(dialect.sql(_DELETE_BLOCKS), (*key, delete_from))
    if extend is not None:
        cur.execute(
            dialect.sql(dialect.ddl(_EXTEND_BLOCK)), (extend[1], extend[2], *key, extend[0])
        )
    if whole:
        cur.executemany(dialect.sql(_UPSERT_BLOCK), [(*key, *block) for block in whole])


def row_parts(key: tuple[str, str, str], change: RowChange) -> list[tuple[str, tuple[Any, ...]]]:
    """Postgres: `write_rows` as parts of one statement (dialect.one_statement), each row
    changed once: the delete spares the rows the upsert writes (in one statement)."""
    extend, whole, delete_from = change
    parts: list[tuple[str, tuple[Any, ...]]] = []
    if delete_from >= 0:
        parts.append((POSTGRES.sql(_DELETE_BLOCKS), (*key, delete_from + len(whole))))
    if extend is not None:
        extend_sql = POSTGRES.sql(POSTGRES.ddl(_EXTEND_BLOCK))
        parts.append((extend_sql, (extend[1], extend[2], *key, extend[0])))
    if whole:
        rows = [(*key, *block) for block in whole]
        parts.append(in_one(POSTGRES.sql(_UPSERT_BLOCK), rows, (3, ("int", "int", "bytea"))))
    return parts


def head_part(key: tuple[str, str, str], cid: str, count: int) -> tuple[str, tuple[Any, ...]]:
    """Postgres: the head of `key` set to checkpoint `cid` holding `count` values."""
    return POSTGRES.sql(UPSERT_HEAD), (*key, cid, count)


KINDS: dict[type, str] = {
    HumanMessage: "human",
    AIMessage: "ai",
    ToolMessage: "tool",
    SystemMessage: "system",
    ChatMessage: "chat",
    FunctionMessage: "function",
}
CLASSES: dict[str, type] = {kind: cls for cls, kind in KINDS.items()}

_set = object.__setattr__


class HeadUnreadable(ValueError):
    """Head rows that do not decode: the history is replayed instead."""


def _plain(value: Any) -> bool:
    """Only what msgpack gives back unchanged (not tuples, enums, str subclasses ...)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return True
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if t is list:
        return all(_plain(v) for v in value)
    return False


def encode(message: Any, serde: Any) -> bytes:
    kind = KINDS.get(type(message))
    if kind is not None and getattr(message, "__pydantic_private__", None) is None:
        fields, extra = message.__dict__, message.__pydantic_extra__
        if _plain(fields) and (extra is None or _plain(extra)):
            try:
                given = message.__pydantic_fields_set__
                names = None if given == fields.keys() else sorted(given)
                return ormsgpack.packb([kind, fields, extra, names])
            except (TypeError, ormsgpack.MsgpackEncodeError):
                pass  # e.g. an int too large for msgpack
    type_tag, data = serde.dumps_typed(message)
    return ormsgpack.packb([SERIALIZED, type_tag, data])


def blocks(values: Sequence[Any], first: int, serde: Any) -> list[Block]:
    items = [encode(v, serde) for v in values]
    return [
        (first + i // BLOCK, len(items[i : i + BLOCK]), b"".join(items[i : i + BLOCK]))
        for i in range(0, len(items), BLOCK)
    ]


AGE_AT_ONCE = 512  # messages decoded at once past which their objects skip the young generations


def decode(rows: Sequence[tuple[int, bytes]], count: int, serde: Any) -> list[Any]:
    """The messages of head rows `(n, data)` in block order; `count` of them in all."""
    if sum(n for n, _ in rows) != count:
        raise HeadUnreadable("the head's blocks do not hold its count of messages")
    # Thousands of new objects, none garbage: the collector's walks would be for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        out: list[Any] = []
        append, new, classes = out.append, object.__new__, CLASSES
        for n, data in rows:
            for item in block_items(n, data):
                if item[0] == SERIALIZED:
                    append(serde.loads_typed((item[1], item[2])))
                    continue
                kind, fields, extra, fields_set = item
                message: Any = new(classes[kind])
                _set(message, "__dict__", fields)
                _set(message, "__pydantic_extra__", extra)
                given = set(fields if fields_set is None else fields_set)
                _set(message, "__pydantic_fields_set__", given)
                _set(message, "__pydantic_private__", None)
                append(message)
        return out
    except (KeyError, ValueError, TypeError, ormsgpack.MsgpackDecodeError) as exc:
        raise HeadUnreadable(str(exc)) from exc
    finally:
        if enabled:
            if count >= AGE_AT_ONCE and not gc.get_freeze_count():
                # Else the collector walks every new object twice (~18 ms at 2,000
                # turns); freeze/unfreeze moves them to the oldest generation without a
                # walk. Skipped when the application froze objects (we would undo it).
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def head_update(
    prev: Sequence[Any] | None, value: Sequence[Any], start: int | None, serde: Any
) -> RowChange:
    """How the rows change from `prev` (None: unknown, write all) to `value`, whose first
    `start` values are unchanged (see `RowChange`; delete from -1: none)."""
    if prev is None or start is None:
        return None, blocks(value, 0, serde), 0
    if start == len(prev):  # only appended: fill the last block, then new ones
        tail = value[start:]
        room = min((-start) % BLOCK, len(tail))
        extend = (
            (start // BLOCK, room, b"".join(encode(v, serde) for v in tail[:room]))
            if room
            else None
        )
        return extend, blocks(tail[room:], (start + room) // BLOCK, serde), -1
    first = start // BLOCK
    return None, blocks(value[first * BLOCK :], first, serde), first


def unchanged_prefix(before: Sequence[Any], after: Sequence[Any], written: int) -> int:
    """How many leading values `after` shares with `before` (the same objects). When the
    list grew by exactly `written` (the step's values), every write was an append."""
    n = len(before)
    if n == 0:
        return 0
    if len(after) == n + written and after[0] is before[0] and after[n - 1] is before[n - 1]:
        return n
    if len(after) >= n and all(map(is_, before, after)):
        return n
    return next((i for i, same in enumerate(map(is_, before, after)) if not same), len(after))


def written_count(writes: Sequence[Any]) -> int:
    """How many values channel writes carry (lists flatten, as in the reducer)."""
    return sum(len(v) if isinstance(v, list) else 1 for v in writes)
