"""Facts about a thread's message list, carried from one model call to the next in a
process instead of worked out again from the first message.

Before each model call the agent reads the whole history several times: the call ids
it holds (graph/agent/call_ids.py), what the model is sent (model_call.prompt_messages)
and the signature of what compaction counted (builtin_hooks/token_prefix.py). At 200
turns (~1,000 messages) that was ~4.5 ms of a ~27 ms warm turn, growing with the thread.
Each of these is a left fold over the list, and the list a step sees starts with the
very same message objects as the one the step before saw (the messages channel only
appends), so a `PrefixMemo` keeps its value for recent lists and folds only the messages
after the longest one a new list starts with.

A list is recognised by the identity of its messages, every one of them compared (in
C: ~10 µs for 1,000), never by length, ids or the first and last alone: an edit, a
removal, a compaction or a branch from an older checkpoint gives a list that shares a
shorter prefix or none, and the value is folded from there. Message objects are not
changed in place (LangGraph's reducers and Gatehouse's make new ones), and the memo
holds the lists it remembers, so an object's identity cannot be reused while it is kept.

The newest messages of a list are not yet the objects the next step will see: the saver
reads a step's writes back from the database to keep the head current
(graph/store/delta_reads.py), so the next run holds copies of them. A fold therefore also
remembers its value `TAIL` messages before the end, a prefix whose objects stay.
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
    """`memo(messages)` is `fold(start, messages)`, computed from the value of the
    longest remembered list that `messages` starts with. `fold(value, more)` returns
    the value for the list extended by `more`, and must not change `value` (other
    lists may continue from it too). `seed(messages)`, where given, is where a list with
    no remembered prefix (in a new process) may start folding, and the value there:
    e.g. at the latest compaction summary, for a fold that starts again at each, so a
    compacted thread's cold read does not walk the messages before it."""

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
