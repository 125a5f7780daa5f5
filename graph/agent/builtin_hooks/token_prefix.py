"""The token count of a thread's model view, kept with the thread, so that a process
that has never seen the thread (a cold resume by id) does not count it all again.

Compaction counts the whole model view before every model call (~1,000 messages at
200 turns). The per-process memo (token_memo.py) is empty in a new process, so each
cold resume counted everything, and paid the memo's own bookkeeping on top. Instead
the hook stores, in its per-thread state, a record of what it counted:

    {"upto": k, "last_id": id of view[k-1], "size": bytes of the key of view[:k],
     "sig": hash of that key, "tokens": count of view[:k], "v": the estimate's version}

and on the next call, when the view still starts with those k messages, counts only
view[k:]. "Still starts with them" is checked exactly, not guessed. The key of a
message holds everything LangChain's `count_tokens_approximately` reads from it: its
class (which gives the role), the length of its text, its name, and its tool calls
(AI message) or call id (tool message); a message of any other kind (content blocks,
another class) has its own count as its key. Equal keys give equal counts. The keys
are serialised with `marshal` format 0 (no references, no interning: the bytes depend
only on the values, in any process), which is self-delimiting, so the bytes of
view[:k]'s keys are a prefix of view's: one serialisation and one pass of BLAKE2b
(128 bits) check the old prefix and sign the new view. An edit that could change the
count (same id, new content; a replaced list; undo, fork) changes the bytes, and the
whole view is counted again. The record is only ever a shortcut: missing, malformed
or from another LangChain version, it is ignored.

Cost at 200 turns (~1,000 messages): ~0.45 ms of CPU for the check against ~1 ms for
LangChain's count and ~4.5 ms for the memo's first pass.

Only the default estimate is carried: it is a sum of per-message terms (each rounded
up on its own), so count(view) = count(view[:k]) + count(view[k:]). A custom
`count_tokens` need not be additive and is always given the whole view.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Mapping, Sequence
from hashlib import blake2b
from typing import Any

import langchain_core
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

# The estimate's formula belongs to LangChain: a record made under another version is
# not trusted.
VERSION = f"langchain-core {langchain_core.__version__}"
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
    record: Mapping[str, Any] | None,
    count: Callable[[Sequence[Any]], int],
) -> tuple[int, dict[str, Any] | None]:
    """(the count of `view`, the record to keep for it; None when there is none).
    `count` is the default estimate (or the memo of it): it is given only what the
    record does not cover."""
    data = _serialised(view)
    tokens: int | None = None
    signed: tuple[Any, int] | None = None  # (BLAKE2b fed the first n bytes of the keys, n)
    if data is not None and isinstance(record, Mapping):
        upto, size = record.get("upto"), record.get("size")
        if (
            isinstance(upto, int)
            and isinstance(size, int)
            and 0 < upto <= len(view)
            and 0 < size <= len(data) - _LIST_HEADER
            and record.get("v") == VERSION
            and isinstance(record.get("tokens"), int)
            and getattr(view[upto - 1], "id", None) == record.get("last_id") is not None
        ):
            hashed = blake2b(data[_LIST_HEADER : _LIST_HEADER + size], digest_size=16)
            if hashed.hexdigest() == record.get("sig"):
                tokens = record["tokens"] + (count(view[upto:]) if upto < len(view) else 0)
                signed = hashed, size  # the new signature goes on from here
    if tokens is None:
        tokens = count(view)
    return tokens, _record(view, tokens, data, signed)


def record_of(view: Sequence[Any], tokens: int) -> dict[str, Any] | None:
    """The record for `view`, whose count is `tokens` (None: see `count_view`)."""
    return _record(view, tokens, _serialised(view))


def _serialised(view: Sequence[Any]) -> memoryview | None:
    try:
        return memoryview(marshal.dumps(_keys(view), 0))
    except (ValueError, AttributeError):  # a value marshal cannot write: no record
        return None


def _record(
    view: Sequence[Any],
    tokens: int,
    data: memoryview | None,
    signed: tuple[Any, int] | None = None,
) -> dict[str, Any] | None:
    last_id = getattr(view[-1], "id", None) if view else None
    if data is None or not isinstance(last_id, str):
        return None  # nothing to recognise the view by
    items = data[_LIST_HEADER:]
    if signed is not None:  # hashing the rest finishes the whole (digests do not end a hash)
        hashed, done = signed
        hashed.update(items[done:])
    else:
        hashed = blake2b(items, digest_size=16)
    return {
        "upto": len(view),
        "last_id": last_id,
        "size": len(items),
        "sig": hashed.hexdigest(),
        "tokens": tokens,
        "v": VERSION,
    }
