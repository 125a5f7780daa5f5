"""Facts about a thread's message list, carried from one model call to the next: the
channel only appends, so a `PrefixMemo` folds only what follows the longest remembered
list (matched by message identity) a new one starts with (~4.5 ms a turn at 200 turns)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import is_
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Lists remembered per memo: each thread's latest and the copies of one step.
SLOTS = 16
# Messages at the end of a list that may come back as copies.
TAIL = 16
# Lists up to this long are folded whole: cheaper than finding and keeping a prefix.
SHORT = 64


@dataclass(eq=False, repr=False)
class PrefixMemo(Generic[T]):
    """`memo(messages)` is `fold(start, messages)`, continued from the longest remembered
    prefix; `fold` must not change its `value`. `seed(messages)`: where a list with no
    remembered prefix may start, and the value there (e.g. the latest summary)."""

    start: T
    fold: Callable[[T, Sequence[Any]], T]
    seed: Callable[[Sequence[Any]], tuple[int, T]] | None = None
    _kept: list[tuple[list[Any], T]] = field(default_factory=list, init=False)  # oldest first
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __call__(self, messages: Sequence[Any]) -> T:
        size = len(messages)
        if size <= SHORT:
            return self.fold(self.start, messages)
        n, value = self._longest_prefix(messages)
        if n == size:
            return value
        if n == 0 and self.seed is not None:
            n, value = self.seed(messages)
        if size - n > TAIL:
            value = self.fold(value, messages[n : size - TAIL])
            self._remember(messages[: size - TAIL], value)
            n = size - TAIL
        value = self.fold(value, messages[n:])
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
        return 0, self.start

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
