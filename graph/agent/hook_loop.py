"""The one event loop an agent's async hooks run on: nodes are sync, and a fresh
`asyncio.run` per call would close the loop a client opened in `awarm_up` sits on.
It is the caller's loop under `AsyncSession` (`bound`: the graph runs on a worker
thread) while that runs, else a loop of its own on a daemon thread; a coroutine never
runs on a loop running in the calling thread (it would wait for itself).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

from graph.protocol.errors import HookError

T = TypeVar("T")


class HookLoop:
    def __init__(self, name: str = "gatehouse-hooks") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._own: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # The caller's loop, under `AsyncSession`: coroutines run there while it runs.
        self.bound: asyncio.AbstractEventLoop | None = None

    def _live_bound(self) -> asyncio.AbstractEventLoop | None:
        bound = self.bound
        return bound if bound is not None and bound.is_running() and not bound.is_closed() else None

    def target(self) -> asyncio.AbstractEventLoop:
        """The loop the next coroutine started from sync code runs on."""
        bound = self._live_bound()
        if bound is not None and not _running_here(bound):
            return bound
        return self._own_loop()

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._own is None or self._own.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                thread.start()
                self._own, self._thread = loop, thread
            return self._own

    def submit(self, awaitable: Awaitable[T]) -> concurrent.futures.Future[T]:
        """Start `awaitable` on the target loop, in the caller's context (so `emit` finds
        the run's stream writer); its result arrives in the returned future."""
        loop = self.target()
        if _running_here(loop):
            if callable(close := getattr(awaitable, "close", None)):
                close()  # it will never run: no "never awaited" warning
            raise HookError(
                "a hook asked to run async code from inside the hooks' own event loop; use `await`"
            )
        context = contextvars.copy_context()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def start() -> None:
            try:
                task = loop.create_task(_as_coroutine(awaitable), context=context)
            except BaseException as exc:
                done.set_exception(exc)
                return
            task.add_done_callback(lambda t: _settle(done, t))

        loop.call_soon_threadsafe(start)
        return done

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run `awaitable` to completion from sync code."""
        return self.submit(awaitable).result()

    async def run_async(self, awaitable: Awaitable[T]) -> T:
        """Run `awaitable` on the hooks' loop from async code: directly when that is the
        running loop, else on it, without blocking the running one."""
        here = _running_loop()
        if here is not None and here in (self._live_bound(), self._own):
            return await awaitable
        return await asyncio.wrap_future(self.submit(awaitable))

    def close(self) -> None:
        """Stop the loop of its own (a bound loop belongs to the caller)."""
        with self._lock:
            loop, thread = self._own, self._thread
            self._own = self._thread = None
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        if not loop.is_running():
            loop.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    return _running_loop() is loop


def _settle(done: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        done.cancel()
    elif (exc := task.exception()) is not None:
        done.set_exception(exc)
    else:
        done.set_result(task.result())


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


# The loop of hooks run outside any HookSet (`run_hooks` called directly): one per process.
default_loop = HookLoop("gatehouse-hooks-default")
