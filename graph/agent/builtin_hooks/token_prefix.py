"""The token count of a thread's model view, kept with the thread (a cold resume does
not count it all again): `[k, bytes of the keys of view[:k], count of view[:k], hash]`,
so only view[k:] is counted when the view provably starts with those k messages. Keys
(all the estimate reads of a message) are written with `marshal` format 0 and hashed
with BLAKE2b keyed by LangChain's version."""

from __future__ import annotations

import marshal
from collections.abc import Callable, Sequence
from hashlib import blake2b
from typing import Any, NamedTuple

import langchain_core
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from gatehouse.graph.agent.prefix_memo import PrefixMemo

# The estimate's formula belongs to LangChain: a record of another version is not trusted.
VERSION = f"langchain-core {langchain_core.__version__}".encode()
# marshal's header of a list (type code, then the item count as 4 bytes).
_LIST_HEADER = 5


def _keys(messages: Sequence[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    add = out.append
    for m in messages:
        cls = m.__class__
        content = m.content if cls in _PLAIN else None
        # Exact classes only (a subclass, e.g. a chunk, may count differently).
        if content.__class__ is not str:
            add((0, count_tokens_approximately([m])))
        elif cls is AIMessage:
            add((2, len(content), m.name, m.tool_calls))
        elif cls is ToolMessage:
            add((4, len(content), m.name, m.tool_call_id))
        else:
            add((_PLAIN[cls], len(content), m.name))
    return out


_PLAIN: dict[type, int] = {HumanMessage: 1, AIMessage: 2, SystemMessage: 3, ToolMessage: 4}


def count_view(
    view: Sequence[Any],
    record: Any,
    count: Callable[[Sequence[Any]], int],
) -> tuple[int, list[Any] | None]:
    """(the count of `view`, the record to keep for it); `count` gets only the rest."""
    tokens: int | None = None
    if isinstance(record, list | tuple) and len(record) == 4:
        upto, size, counted, sig = record
        if all(isinstance(n, int) for n in record[:3]) and 0 < upto <= len(view) and size > 0:
            # The prefix's signature first: the whole view's continues from it.
            prefix = _signed(view[:upto])
            if prefix.size == size and prefix.hashed is not None and _value(prefix.hashed) == sig:
                tokens = counted + (count(view[upto:]) if upto < len(view) else 0)
    if tokens is None:
        tokens = count(view)
    return tokens, record_of(view, tokens)


def record_of(view: Sequence[Any], tokens: int) -> list[Any] | None:
    """The record for `view`, whose count is `tokens` (None: see `count_view`)."""
    signed = _signed(view)
    if signed.hashed is None or not view:
        return None
    return [len(view), signed.size, tokens, _value(signed.hashed)]


class _Signed(NamedTuple):
    """The keys of a view so far: their size in bytes, and BLAKE2b fed those bytes."""

    size: int
    hashed: Any


def _signed_after(signed: _Signed, more: Sequence[Any]) -> _Signed:
    if signed.hashed is None:
        return signed
    try:
        # Format 0 writes an item alike inside a list or alone: a longer view's bytes go on.
        data = memoryview(marshal.dumps(_keys(more), 0))[_LIST_HEADER:]
    except (ValueError, AttributeError):  # a value marshal cannot write: no record
        return _Signed(signed.size, None)
    hashed = signed.hashed.copy()
    hashed.update(data)
    return _Signed(signed.size + len(data), hashed)


_signed: PrefixMemo[_Signed] = PrefixMemo(
    _Signed(0, blake2b(digest_size=8, key=VERSION)), _signed_after
)


def _value(hashed: Any) -> int:
    # A non-negative 63-bit int: stored as a plain integer (9 bytes), by any serializer.
    return int.from_bytes(hashed.digest(), "big") >> 1
