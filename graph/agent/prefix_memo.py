"""Facts about a thread's message list, carried from one model call to the next.

Before each call the agent folds over the whole history several times (call ids,
call_ids.py; what the model is sent, model_call.prompt_messages; compaction's count,
builtin_hooks/token_prefix.py): ~4.5 ms of a ~27 ms turn at 200 turns. The messages
channel only appends, so a `PrefixMemo` keeps the value of recent lists and folds only
what follows the longest one a new list starts with. Lists are matched by the identity
of every message (~10 µs for 1,000 in C), never by length or ids: an edit, compaction
or branch shares a shorter prefix. Messages are never changed in place and the memo
holds the lists it keeps, so an identity cannot be reused meanwhile. The newest `TAIL`
messages come back as copies next step (the saver reads a step's writes back,
graph/store/delta_reads.py), so a fold also remembers its value before them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from operator import is_
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Lists remembered per memo: a process serving several threads at once keeps each
# thread's latest list and the copies LangGraph hands the nodes of one step.
SLOTS = 16
# Messages at the end of a list that may come back as copies (see above).
TAIL = 16
# Lists up to this long are folded whole: cheaper than finding and keeping a prefix.
SHORT = 64


class PrefixMemo(Generic[T]):
    """`memo(messages)` is `fold(start, messages)`, continued from the longest remembered
    prefix. `fold(value, more)` must not change `value` (other lists continue from it).
    `seed(messages)`: where a list with no remembered prefix may start, and the value
    there (e.g. the latest compaction summary, for a fold that restarts at each)."""

    def __init__(
        self,
        start: T,
        fold: Callable[[T, Sequence[Any]], T],
        seed: Callable[[Sequence[Any]], tuple[int, T]] | None = None,
    ) -> None:
        self._start = start
        self._fold = fold
        self._seed = seed
        self._kept: list[tuple[list[Any], T]] = []  # oldest first
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Any]) -> T:
        size = len(messages)
        if size <= SHORT:
            return self._fold(self._start, messages)
        n, value = self._longest_prefix(messages)
        if n == size:
            return value
        if n == 0 and self._seed is not None:
            n, value = self._seed(messages)
        if size - n > TAIL:
            value = self._fold(value, messages[n : size - TAIL])
            self._remember(messages[: size - TAIL], value)
            n = size - TAIL
        value = self._fold(value, messages[n:])
        self._remember(messages, value)
        return value

    def _remember(self, messages: Sequence[Any], value: T) -> None:
        with self._lock:
            self._kept.append((list(messages), value))
            del self._kept[:-SLOTS]

    def _longest_prefix(self, messages: Sequence[Any]) -> tuple[int, T]:
        size = len(messages)
        with self._lock:
            kept = sorted(self._kept, key=lambda entry: len(entry[0]), reverse=True)
        for held, value in kept:  # the longest first: the first that matches is the one
            n = len(held)
            if n <= size and held[-1] is messages[n - 1] and all(map(is_, held, messages)):
                return n, value
        return 0, self._start

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
