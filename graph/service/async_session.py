"""The session API for asyncio callers, over the sync one: every public member of
`Session` under its name, made from the Session's own at import; a `Run` becomes an
`AsyncRun` (driven on its own thread, events handed to the loop), a view an `AsyncView`,
the rest runs in a worker thread. A run whose consumer goes away is cancelled.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from gatehouse.graph.agent.compiled import parts_of
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import RunInProgress
from gatehouse.graph.service.session import Run, Session
from gatehouse.graph.service.view import ThreadList, ThreadView

if TYPE_CHECKING:
    from gatehouse.graph.service.config import Settings

__all__ = ["AsyncRun", "AsyncSession", "AsyncView", "RunInProgress"]

V = TypeVar("V", ThreadView, ThreadList)


class AsyncRun:
    """One run's events for `async for`; leaving early cancels the run (`wait()` for its end)."""

    def __init__(self, run: Run, loop: asyncio.AbstractEventLoop) -> None:
        self.thread_id = run.thread_id
        self._run = run
        self._loop = loop
        self._on_done: Callable[[], None] = lambda: None
        self._queue: asyncio.Queue[ev.Event | None] = asyncio.Queue()  # None: the end
        self._ended = False  # the consumer has seen the end
        self._detached = False  # nobody listens any more: stop handing events to the loop

    def _hand_over(self, event: ev.Event | None) -> None:
        # On the run's thread: each event as it comes, None after the last.
        if event is None:
            self._on_done()
        if self._detached:
            return
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:  # the loop is closed: keep draining, nobody is listening
            self._detached = True

    @property
    def status(self) -> ev.RunStatus | None:
        return self._run.status

    @property
    def done(self) -> bool:
        return self._run.done

    def cancel(self) -> None:
        self._run.cancel()

    async def aclose(self) -> None:
        if not self._ended and not self.done:
            self._run.cancel()
        self._detached = True
        self._ended = True

    async def wait(self) -> ev.RunStatus | None:
        await asyncio.to_thread(self._run.join)
        return self._run.status

    async def collect(self) -> list[ev.Event]:
        return [event async for event in self]

    async def result(self) -> ev.Done:
        done = await anext(self)
        assert isinstance(done, ev.Done), done
        return done

    def __aiter__(self) -> AsyncIterator[ev.Event]:
        return self

    async def __anext__(self) -> ev.Event:
        if self._ended:
            raise StopAsyncIteration
        try:
            item = await self._queue.get()
        except asyncio.CancelledError:
            await self.aclose()
            raise
        if item is None:
            self._ended = True
            raise StopAsyncIteration
        return item

    async def __aenter__(self) -> AsyncRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncView(Generic[V]):
    """A view whose fields and methods are awaited, read in a worker thread."""

    def __init__(self, view: V) -> None:
        self.view: V = view

    def __getattr__(self, name: str) -> Any:
        found = inspect.getattr_static(self.view, name)
        if inspect.isfunction(found):
            return functools.partial(asyncio.to_thread, getattr(self.view, name))
        if isinstance(found, functools.cached_property):
            return asyncio.to_thread(getattr, self.view, name)
        return found


class AsyncSession:
    """`Session` for asyncio: the same methods, awaitable, under the same rules."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._live: set[AsyncRun] = set()
        self._live_lock = threading.Lock()
        self._bind_hooks()

    def _bind_hooks(self) -> None:
        """Async hooks run on the caller's loop: what `awarm_up` opens lives there."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # bound on the first call made from a loop
        parts = parts_of(self.session.agent)
        if parts is not None:
            parts.hooks.use_loop(loop)

    @classmethod
    async def open(
        cls,
        settings: Settings | None = None,
        *,
        source: str | None = None,
        actor: str | None = None,
    ) -> AsyncSession:
        """`graph.open_session`, off the loop."""
        from gatehouse.graph.service.app import open_session

        return cls(
            await asyncio.to_thread(lambda: open_session(settings, source=source, actor=actor))
        )

    async def warm_up(self) -> None:
        """Warm the hooks up now, on this loop, not before the first hook runs."""
        self._bind_hooks()
        parts = parts_of(self.session.agent)
        if parts is not None:
            await parts.hooks.awarm_up()

    @property
    def info(self) -> dict[str, Any]:
        return self.session.info

    new_thread_id = staticmethod(Session.new_thread_id)

    def view(self, thread_id: str) -> AsyncView[ThreadView]:
        return AsyncView(self.session.view(thread_id))

    def thread_list(self, limit: int = 200) -> AsyncView[ThreadList]:
        return AsyncView(self.session.thread_list(limit))

    if TYPE_CHECKING:  # the methods made from the Session's below

        def __getattr__(self, name: str) -> Any: ...

    def running(self, thread_id: str) -> bool:
        """Whether a run of this process still goes on the thread (or drains)."""
        with self._live_lock:
            return any(run.thread_id == thread_id and not run.done for run in self._live)

    async def _launch(self, make: Callable[[], Run]) -> AsyncRun:
        loop = asyncio.get_running_loop()
        self._bind_hooks()
        # Validation raises here, in the caller, before anything runs.
        setting_up = asyncio.ensure_future(asyncio.to_thread(make))
        try:
            sync_run = await asyncio.shield(setting_up)
        except asyncio.CancelledError:
            # Left during setup: only running frees the run's lease, so it runs cancelled.
            setting_up.add_done_callback(lambda done: self._orphan(done, loop))
            raise
        return self._begin(sync_run, loop)

    def _begin(self, sync_run: Run, loop: asyncio.AbstractEventLoop) -> AsyncRun:
        run = AsyncRun(sync_run, loop)
        run._on_done = lambda: self._forget(run)
        with self._live_lock:
            self._live.add(run)
        run._run.start(run._hand_over)
        return run

    def _orphan(self, setting_up: asyncio.Future[Run], loop: asyncio.AbstractEventLoop) -> None:
        if setting_up.cancelled() or setting_up.exception() is not None:
            return
        run = self._begin(setting_up.result(), loop)
        run.cancel()
        run._detached = True

    def _forget(self, run: AsyncRun) -> None:
        with self._live_lock:
            self._live.discard(run)

    async def close(self, *, cancel_runs: bool = True) -> None:
        """Close the storage and hooks once this process's runs have ended."""
        with self._live_lock:
            live = list(self._live)
        for run in live:
            if cancel_runs:
                run.cancel()
        for run in live:
            await run.wait()
        await asyncio.to_thread(self.session.close)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _from_session(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """An `AsyncRun` for a method that starts a run, else the method in a worker thread."""
    starts_run = inspect.signature(method).return_annotation in ("Run", Run)

    async def call(self: AsyncSession, *args: Any, **kwargs: Any) -> Any:
        bound = functools.partial(getattr(self.session, name), *args, **kwargs)
        return await (self._launch(bound) if starts_run else asyncio.to_thread(bound))

    return functools.update_wrapper(call, method)


for _name, _member in inspect.getmembers(Session):
    if _name.startswith("_") or _name in vars(AsyncSession):
        continue
    if isinstance(inspect.getattr_static(Session, _name), property):
        setattr(AsyncSession, _name, property(attrgetter(f"session.{_name}")))
    elif inspect.isfunction(_member):
        setattr(AsyncSession, _name, _from_session(_name, _member))
# The old name of `send`, kept for embedders; made at import like the rest.
AsyncSession.start = AsyncSession.send  # type: ignore[attr-defined]  # made above, not declared
