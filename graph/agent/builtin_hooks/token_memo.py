"""`count_tokens_approximately`, remembered per message object: the estimate is a sum of
per-message terms, and compaction counts the whole history twice a turn. A cheap
fingerprint is checked anyway, and an entry goes with its object."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from contextlib import suppress
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

_lock = threading.Lock()
_counts: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], int]] = {}


def _fingerprint(message: BaseMessage) -> tuple[Any, ...]:
    content = message.content
    return (
        type(message),
        len(content) if isinstance(content, str) else repr(content),
        len(getattr(message, "tool_calls", None) or ()),
        message.name,
    )


def _forget(key: int, _: Any) -> None:
    with _lock:
        _counts.pop(key, None)


def count_tokens_remembered(messages: Sequence[Any]) -> int:
    """Exactly `count_tokens_approximately(messages)` (default options)."""
    return sum(map(_count, messages))


def _count(message: Any) -> int:
    if not isinstance(message, BaseMessage):
        return count_tokens_approximately([message])
    key, mark = id(message), _fingerprint(message)
    entry = _counts.get(key)
    if entry is not None and entry[0]() is message and entry[1] == mark:
        return entry[2]
    count = count_tokens_approximately([message])
    with suppress(TypeError):  # a message class without weak references: counted each time
        ref = weakref.ref(message, partial(_forget, key))
        with _lock:
            _counts[key] = (ref, mark, count)
    return count
