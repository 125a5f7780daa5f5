"""What the checkpoint tables and the head hold, read as plain data without LangGraph
(the terminal's fast commands): an object stored with a msgpack extension type comes back
as its arguments (a model as the dict of its fields), as LangGraph's own
`_msgpack_ext_hook_to_json` does.
"""

from __future__ import annotations

import zlib
from typing import Any

import ormsgpack

from gatehouse.graph.store.langgraph_private import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
    PUSH,
)

# The head's rows (graph/store/head.py): messages per block, the kind of a serialized item.
BLOCK = 32
SERIALIZED = "~"
HEAD_KEY = "thread_id = ? AND checkpoint_ns = ? AND channel = ?"
READ_HEAD = f"SELECT checkpoint_id, count FROM gatehouse_heads WHERE {HEAD_KEY}"
READ_BLOCKS = f"SELECT n, data FROM gatehouse_head_blocks WHERE {HEAD_KEY} ORDER BY pos"


class UnreadableValue(ValueError):
    """A stored value in a format this reader does not know (pickle, encryption)."""


def _ext(code: int, data: bytes) -> Any:
    inner = ormsgpack.unpackb(data, ext_hook=_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if code == EXT_DELTA_SNAPSHOT:
        return inner
    if code == EXT_CONSTRUCTOR_SINGLE_ARG:
        if inner[0] == "uuid" and inner[1] == "UUID":
            h = inner[2]
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return inner[2]
    if code in (
        EXT_CONSTRUCTOR_POS_ARGS,
        EXT_CONSTRUCTOR_KW_ARGS,
        EXT_METHOD_SINGLE_ARG,
        EXT_PYDANTIC_V1,
        EXT_PYDANTIC_V2,
    ):
        return inner[2]
    return None  # numpy arrays and unknown codes: nothing a thread reader shows


# An interrupt's last keyword (a fixstr): the answer's JSON schema, 4/5 of a card's bytes,
# which no reader shows.
_SCHEMA_KEY = b"\xafresponse_schema"


def _schemaless(code: int, data: bytes) -> Any:
    """As `_ext`, but an `Interrupt`'s keywords without a last `response_schema`: read up
    to that key, the map's count one less (if the cut is wrong, read whole)."""
    at = data.rfind(_SCHEMA_KEY) if code == EXT_CONSTRUCTOR_KW_ARGS else -1
    head = 1  # [module, name, {keywords}]: skip the two strings (fixstr or str 8)
    for _ in range(2):
        if at < 0 or head >= at or data[0] != 0x93:
            return _ext(code, data)
        tag = data[head]
        head += (
            1 + (tag & 0x1F) if 0xA0 <= tag <= 0xBF else 2 + data[head + 1] if tag == 0xD9 else at
        )
    if head < at and 0x81 <= data[head] <= 0x8F:
        try:
            inner = ormsgpack.unpackb(
                data[:head] + bytes([data[head] - 1]) + data[head + 1 : at],
                ext_hook=_ext,
                option=ormsgpack.OPT_NON_STR_KEYS,
            )
        except ValueError:
            inner = None
        if (
            isinstance(inner, list)
            and isinstance(inner[-1], dict)
            and "response_schema" not in inner[-1]
        ):
            return inner[-1]
    return _ext(code, data)


def loads(type_tag: str | None, data: bytes | None, ext_hook: Any = _ext) -> Any:
    """A value as the saver stored it (`(type, bytes)`), as plain data."""
    if type_tag is None or data is None or type_tag == "null":
        return None
    codec = ""
    if "+" in type_tag:
        type_tag, codec = type_tag.split("+", 1)
    if codec == "zlib":
        data = zlib.decompress(data)
    elif codec not in ("", "raw"):
        raise UnreadableValue(f"stored with codec {codec!r}")
    if type_tag == "msgpack":
        return ormsgpack.unpackb(data, ext_hook=ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)
    if type_tag == "json":
        import json

        return json.loads(data)
    if type_tag in ("bytes", "bytearray"):
        return bytes(data)
    raise UnreadableValue(f"stored as {type_tag!r}")


def block_items(count: int, data: bytes) -> list[list[Any]]:
    """The items of a head block of `count` messages, read as one msgpack array."""
    return ormsgpack.unpackb(b"\xdd" + count.to_bytes(4, "big") + bytes(data))


def block_fields(count: int, data: bytes) -> list[dict[str, Any]]:
    return [
        loads(item[1], item[2]) if item[0] == SERIALIZED else item[1]
        for item in block_items(count, data)
    ]


def interrupts_in(type_tag: str | None, data: bytes | None) -> list[tuple[str, Any]]:
    """(interrupt id, value) for each interrupt of an interrupt write as stored."""
    return interrupts_of(loads(type_tag, data, _schemaless))


def interrupts_of(value: Any) -> list[tuple[str, Any]]:
    """(interrupt id, value) for each interrupt of an interrupt write."""
    items = value if isinstance(value, list | tuple) else [value]
    return [(str(i["id"]), i.get("value")) for i in items if isinstance(i, dict) and "id" in i]


def task_order(task_path: str | None, task_id: str, idx: int) -> tuple[int, str, str, int]:
    """LangGraph's order of a step's tasks: `Send` tasks (PUSH, zero-padded paths) first."""
    path = task_path or ""
    return (0 if PUSH in path else 1, path, task_id, idx)
