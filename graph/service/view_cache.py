"""A Session's transcripts, converted once per message: converting costs far more
than comparing (10,000 messages took ~0.2 s a read), and a run appends, so after a
turn only the new ones are converted. A view is reused only for a message of the same
class whose `__dict__` equals a copy of the one it was made from; from the first that
differs on, all are converted again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from graph.protocol.threads import MessageView
from graph.service.transcript import message_view

__all__ = ["ViewCache"]


def _fields(m: Any) -> tuple[type, dict[str, Any] | None]:
    fields = getattr(m, "__dict__", None)
    return type(m), None if fields is None else dict(fields)


def _same(known: tuple[type, dict[str, Any] | None], m: Any) -> bool:
    # A message without a `__dict__` (not a LangChain message) is never reused.
    return known[1] is not None and type(m) is known[0] and getattr(m, "__dict__", None) == known[1]


class ViewCache:
    """The last read of the last few threads: their messages and views."""

    SIZE = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: OrderedDict[
            str, tuple[list[tuple[type, dict[str, Any] | None]], list[MessageView]]
        ] = OrderedDict()

    def views(self, thread_id: str, messages: Sequence[Any]) -> list[MessageView]:
        with self._lock:
            hit = self._last.get(thread_id)
        kept: list[MessageView] = []
        if hit is not None:
            old, old_views = hit
            same, most = 0, min(len(old), len(messages))
            while same < most and _same(old[same], messages[same]):
                same += 1
            kept = old_views[:same]
        views = kept + [message_view(m) for m in messages[len(kept) :]]
        fields = (hit[0][: len(kept)] if hit is not None else []) + [
            _fields(m) for m in messages[len(kept) :]
        ]
        with self._lock:
            self._last[thread_id] = (fields, views)
            self._last.move_to_end(thread_id)
            while len(self._last) > self.SIZE:
                self._last.popitem(last=False)
        return list(views)
