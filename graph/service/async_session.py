"""The session API for asyncio callers (WebSocket / HTTP services), over the sync one.

    session = await AsyncSession.open(settings)     # or AsyncSession(open_session(...))
    run = await session.submit(SendMessage(None, "list files"))  # refusals raise here
    async with run:                                 # leaving early cancels the run
        async for event in run: ...

Every public member of `Session` is here under its name and signature, made from the
Session's own at import (tests/test_async_parity.py): what returns a `Run` (`submit`
and its shorthands) returns an `AsyncRun`, the sync run driven on its own thread
(`Run.start`) and its events handed to the loop; `view` and `thread_list` give an
`AsyncView`, each field awaited; the rest runs in a worker thread. So
nothing here re-implements a rule of the Session. A run whose consumer goes away is
cancelled and drained to its end in the background: it stops at its next safe point
with every tool call answered, never half-way.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from graph.agent.compiled import parts_of
from graph.protocol import events as ev
from graph.protocol.errors import RunInProgress
from graph.service.session import Run, Session
from graph.service.view import ThreadList, ThreadView

if TYPE_CHECKING:
    from graph.service.config import Settings

__all__ = ["AsyncRun", "AsyncSession", "AsyncView", "RunInProgress"]

V = TypeVar("V", ThreadView, ThreadList)


class _End:
    """The last item a run puts on its queue."""


_END = _End()


class AsyncRun:
    """One run's events for `async for`, driven on a worker thread from the start.
    `cancel()` asks the run to stop at its next safe point (the stream goes on up to
    `run_finished`, status "cancelled"). Leaving `async with run:` early, `aclose()`, or
    the consuming task being cancelled all cancel the run and let it finish in the
    background; `await run.wait()` waits for that end."""

    def __init__(self, run: Run, loop: asyncio.AbstractEventLoop) -> None:
        self.thread_id = run.thread_id
        self._run = run
        self._loop = loop
        self._on_done: Callable[[], None] = lambda: None
        self._queue: asyncio.Queue[ev.Event | _End] = asyncio.Queue()
        self._ended = False  # the consumer has seen the end
        self._detached = False  # nobody listens any more: stop handing events to the loop

    def _start(self) -> AsyncRun:
        self._run.start(self._hand_over)
        return self

    def _hand_over(self, event: ev.Event | None) -> None:
        """On the run's thread: each event as it comes (a pause and the end once saved and
        the thread's lease released), None after the last."""
        if event is None:
            self._on_done()
        if self._detached:
            return
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event or _END)
        except RuntimeError:  # the loop is closed: keep draining, nobody is listening
            self._detached = True

    @property
    def status(self) -> ev.RunStatus | None:
        """The run's final status (see `graph.protocol.events.RunStatus`), None while it runs."""
        return self._run.status

    @property
    def done(self) -> bool:
        return self._run.done

    def cancel(self) -> None:
        """Stop at the next safe point; every tool call still gets its answer."""
        self._run.cancel()

    async def aclose(self) -> None:
        """Stop listening. A run still going is cancelled and drained in the background."""
        if not self._ended and not self.done:
            self._run.cancel()
        self._detached = True
        self._ended = True

    async def wait(self) -> ev.RunStatus | None:
        """Wait until the run has ended (also after `aclose`); returns its status."""
        await asyncio.to_thread(self._run.join)
        return self._run.status

    async def collect(self) -> list[ev.Event]:
        return [event async for event in self]

    async def result(self) -> ev.Done:
        """What an operation that starts no run did: its one event."""
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
        if isinstance(item, _End):
            self._ended = True
            raise StopAsyncIteration
        return item

    async def __aenter__(self) -> AsyncRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncView(Generic[V]):
    """A view (graph/service/view.py) for asyncio: each field and method of `view` is
    awaitable here under its name, read in a worker thread (`await view.pending`)."""

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
    """`Session` for asyncio: the same methods, awaitable.

    The rules are the sync session's: among them one run per thread at a time (its
    run lease, across processes), so starting a run on a thread whose earlier run is
    still going, or still draining after its client left, raises `RunInProgress`.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._live: set[AsyncRun] = set()
        self._live_lock = threading.Lock()
        self._bind_hooks()

    def _bind_hooks(self) -> None:
        """Async hooks run on the caller's event loop (see graph/agent/hooks.py):
        the graph runs on worker threads, so this loop is free to run them, and what
        the hooks open in `awarm_up` lives on the loop that also runs `arun`."""
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
        """The default Gatehouse (`graph.open_session`): settings from
        gatehouse.toml and the environment when none are given. `source` / `actor`:
        what the decision log records for decisions made through it."""
        from graph.service.app import open_session

        return cls(
            await asyncio.to_thread(lambda: open_session(settings, source=source, actor=actor))
        )

    async def warm_up(self) -> None:
        """Warm the hooks up now (on this loop) instead of before the first hook runs."""
        self._bind_hooks()
        parts = parts_of(self.session.agent)
        if parts is not None:
            await parts.hooks.awarm_up()

    @property
    def info(self) -> dict[str, Any]:
        return self.session.info

    @staticmethod
    def new_thread_id() -> str:
        return Session.new_thread_id()

    def view(self, thread_id: str) -> AsyncView[ThreadView]:
        """`Session.view`, its fields awaitable: `await session.view(thread_id).pending`."""
        return AsyncView(self.session.view(thread_id))

    def thread_list(self, limit: int = 200) -> AsyncView[ThreadList]:
        """`Session.thread_list`, its fields awaitable."""
        return AsyncView(self.session.thread_list(limit))

    if TYPE_CHECKING:  # the methods made from the Session's below

        def __getattr__(self, name: str) -> Any: ...

    def running(self, thread_id: str) -> bool:
        """Whether a run of this process is still going on the thread (also one that is
        draining after its consumer left)."""
        with self._live_lock:
            return any(run.thread_id == thread_id and not run.done for run in self._live)

    async def _launch(self, make: Callable[[], Run]) -> AsyncRun:
        loop = asyncio.get_running_loop()
        self._bind_hooks()
        # Validation (a bad decision, a pending approval, a run already going) raises
        # here, in the caller, before anything runs.
        setting_up = asyncio.ensure_future(asyncio.to_thread(make))
        try:
            sync_run = await asyncio.shield(setting_up)
        except asyncio.CancelledError:
            # The caller went away while the run was set up. Once set up it holds the
            # thread's lease, which only running it releases: run it cancelled, so it
            # stops at its first safe point, with nobody listening.
            setting_up.add_done_callback(lambda done: self._orphan(done, loop))
            raise
        return self._begin(sync_run, loop)

    def _begin(self, sync_run: Run, loop: asyncio.AbstractEventLoop) -> AsyncRun:
        run = AsyncRun(sync_run, loop)
        run._on_done = lambda: self._forget(run)
        with self._live_lock:
            self._live.add(run)
        return run._start()

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
        """Close the storage once the runs of this process have ended; with
        `cancel_runs` they are cancelled first (they still end at a safe point). The
        hooks close too (`aclose` on this loop)."""
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
    """AsyncSession's form of the Session's method `name`: an `AsyncRun` for a method
    that starts a run, else the method run in a worker thread."""
    if inspect.signature(method).return_annotation in ("Run", Run):

        async def launch(self: AsyncSession, *args: Any, **kwargs: Any) -> AsyncRun:
            return await self._launch(lambda: getattr(self.session, name)(*args, **kwargs))

        made = launch
    else:

        async def in_thread(self: AsyncSession, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(getattr(self.session, name), *args, **kwargs)

        made = in_thread
    return functools.update_wrapper(made, method)


def _session_property(name: str) -> property:
    return property(lambda self: getattr(self.session, name), doc=getattr(Session, name).__doc__)


for _name, _member in inspect.getmembers(Session):
    if _name.startswith("_") or _name in vars(AsyncSession):
        continue
    if isinstance(inspect.getattr_static(Session, _name), property):
        setattr(AsyncSession, _name, _session_property(_name))
    elif inspect.isfunction(_member):
        setattr(AsyncSession, _name, _from_session(_name, _member))
# The old name of `send`, kept for embedders; made at import like the rest.
AsyncSession.start = AsyncSession.send  # type: ignore[attr-defined]  # made above, not declared
