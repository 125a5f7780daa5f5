"""Daemon threads kept for the next run (starting one costs ~0.25 ms, twice a turn).
Not a ThreadPoolExecutor: its threads are joined at exit, so a run stuck in a model
call would hold the process open. A worker idle for `IDLE_S` ends.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from queue import Empty, SimpleQueue

IDLE_S = 60.0

_Job = tuple[contextvars.Context, Callable[[], None]]
_jobs: SimpleQueue[_Job] = SimpleQueue()
_lock = threading.Lock()
_idle = 0  # workers waiting on `_jobs` (or about to): each put is taken by exactly one


def _forget_workers() -> None:
    # In a forked child the parent's workers are not there to take a job.
    global _jobs, _lock, _idle
    _jobs, _lock, _idle = SimpleQueue(), threading.Lock(), 0


os.register_at_fork(after_in_child=_forget_workers)


def run_in_worker(job: Callable[[], None]) -> None:
    """Run `job` on an idle worker thread, or a new one, in a copy of the caller's context."""
    global _idle
    item = (contextvars.copy_context(), job)
    with _lock:
        if _idle:
            _idle -= 1
            _jobs.put(item)
            return
    # Handed over in a list the worker empties: a Thread keeps its `args` until its
    # target returns, and this one returns only when it has been idle for IDLE_S.
    threading.Thread(target=_work, args=([item],), name="gatehouse-run", daemon=True).start()


def _work(first: list[_Job]) -> None:
    global _idle
    item = first.pop()
    while True:
        context, job = item
        context.run(job)
        del context, job, item  # nothing of the last run kept alive while idle
        with _lock:
            _idle += 1
        try:
            item = _jobs.get(timeout=IDLE_S)
        except Empty:
            with _lock:
                try:
                    # A job put after the timeout, before the lock: still counted on us.
                    item = _jobs.get_nowait()
                except Empty:
                    _idle -= 1
                    return
