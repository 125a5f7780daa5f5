"""`max_parallel_tools`: a semaphore per thread, held around a call's execution only.
Not LangGraph's `max_concurrency`: a run streaming `custom` or `messages` parks a
waiter on one of its workers, so a limit of 1 hangs the run (`Pregel.stream`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ToolSlots:
    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(
                f"max_parallel_tools must be at least 1 (or None for no limit), not {limit}"
            )
        self.limit = limit
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[threading.Semaphore, int]] = {}

    @contextmanager
    def slot(self, thread_id: str) -> Iterator[None]:
        """Hold one of the thread's slots while a call executes."""
        if self.limit is None:
            yield
            return
        with self._lock:
            semaphore, users = self._runs.get(thread_id) or (threading.Semaphore(self.limit), 0)
            self._runs[thread_id] = (semaphore, users + 1)
        try:
            with semaphore:
                yield
        finally:
            with self._lock:
                semaphore, users = self._runs[thread_id]
                if users <= 1:
                    del self._runs[thread_id]
                else:
                    self._runs[thread_id] = (semaphore, users - 1)
