"""Hooks: user code that changes a run at fixed points (`before_llm`, `after_llm`,
`before_tool`, `on_exit`) without forking the graph. A hook is an object with
`run(state)` (or an async `arun`, or Haystack's `run_async`) or a function wrapped with
`@hook`; at a point they run in list order, each seeing the updates before it. A hook
that raises or breaks the contract fails the run with `HookError`, nothing written."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import importlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph.message import add_messages

from gatehouse.graph.agent.history import pairing_problem
from gatehouse.graph.agent.hook_state import copies_state, in_place_changes, state_for, thaw
from gatehouse.graph.agent.state import FLOW_KEYS, HOOK_KEYS, MERGED_KEYS, add_usage
from gatehouse.graph.protocol.errors import HookError
from gatehouse.graph.protocol.tools import scoped

HookPoint = Literal["before_llm", "after_llm", "before_tool", "on_exit"]
HOOK_POINTS: tuple[HookPoint, ...] = ("before_llm", "after_llm", "before_tool", "on_exit")
# Haystack's nested spelling of the control keys: an alias of the flat ones.
FLOW_CONTROL = "flow_control"
# Async names of the lifecycle and run methods, ours first, then Haystack's.
ASYNC_NAMES = {
    "run": ("arun", "run_async"),
    "warm_up": ("awarm_up", "warm_up_async"),
    "close": ("aclose", "close_async"),
}

_current_point: contextvars.ContextVar[HookPoint | None] = contextvars.ContextVar(
    "gatehouse_hook_point", default=None
)

T = TypeVar("T")
Update = Mapping[str, Any] | None


class HookLoop:
    """The one loop an agent's async hooks run on (what `awarm_up` opens works in `arun`):
    the caller's under `AsyncSession` (`bound`) while it runs, else its own thread's."""

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

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._own is None or self._own.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                thread.start()
                self._own, self._thread = loop, thread
            return self._own

    def submit(self, awaitable: Awaitable[T]) -> concurrent.futures.Future[T]:
        """Start `awaitable` on the bound loop (unless running on it), else on the loop of
        its own, in the caller's context (for `emit`)."""
        bound = self._live_bound()
        loop = bound if bound is not None and _running_loop() is not bound else self._own_loop()
        if _running_loop() is loop:
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
        return self.submit(awaitable).result()

    async def run_async(self, awaitable: Awaitable[T]) -> T:
        """Run `awaitable` on the hooks' loop from async code, never blocking this one."""
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


class Hook(Protocol):
    def run(self, state: Mapping[str, Any]) -> Update: ...


class FunctionHook:
    """A plain function (sync or async) `state -> update | None` as a hook."""

    def __init__(self, fn: Callable[[Mapping[str, Any]], Update | Awaitable[Update]]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "hook")
        self.is_async = inspect.iscoroutinefunction(fn)

    def run(self, state: Mapping[str, Any]) -> Update:
        out = self.fn(state)
        return default_loop.run(out) if inspect.isawaitable(out) else out

    async def arun(self, state: Mapping[str, Any]) -> Update:
        out = self.fn(state)
        return await out if inspect.isawaitable(out) else out

    def __repr__(self) -> str:
        return f"hook({self.name})"


# Makes a plain function `state -> update | None` (or an async one) a hook.
hook = FunctionHook


def current_point() -> HookPoint | None:
    return _current_point.get()


def load_hook(spec: Any) -> Any:
    """A hook object, a function, an import path "package.module:attr" (a class there
    is instantiated without arguments), or, from a config file, a table
    `{path = "package.module:Class", args = {...}}` (the class called with `args`)."""
    if isinstance(spec, Mapping):
        if set(spec) - {"path", "args"} or not isinstance(spec.get("path"), str):
            raise ValueError(
                f"a hook table needs 'path' (and optionally 'args'), got {dict(spec)!r}"
            )
        return load_hook(_import(spec["path"])(**dict(spec.get("args") or {})))
    if isinstance(spec, str):
        return load_hook(_import(spec))
    if isinstance(spec, type):
        return load_hook(spec())
    if any(hasattr(spec, name) for name in ("run", *ASYNC_NAMES["run"])):
        return spec
    if callable(spec):
        return FunctionHook(spec)
    raise TypeError(f"not a hook (needs run(state), arun(state) or run_async(state)): {spec!r}")


def config_module(name: str) -> str:
    """A module a config names; gatehouse 0.1's top-level `graph`, `tools`, `ui` are gatehouse's."""
    return f"gatehouse.{name}" if name.partition(".")[0] in ("graph", "tools", "ui") else name


def _import(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not attr:
        raise ValueError(f"hook path {path!r} must look like 'package.module:name'")
    try:
        return getattr(importlib.import_module(config_module(module_name)), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load hook {path!r}: {exc}") from exc


def normalise_hooks(
    hooks: Mapping[str, Iterable[Any]] | HookSet | None,
) -> dict[HookPoint, list[Any]]:
    if isinstance(hooks, HookSet):
        return {p: list(hooks.points[p]) for p in HOOK_POINTS}
    result: dict[HookPoint, list[Any]] = {p: [] for p in HOOK_POINTS}
    for point, items in (hooks or {}).items():
        if point not in HOOK_POINTS:
            raise ValueError(f"unknown hook point {point!r}; use one of {', '.join(HOOK_POINTS)}")
        if isinstance(items, str | Mapping) or not isinstance(items, Iterable):
            items = [items]
        result[point] = [load_hook(h) for h in items]
    return result


def _form(h: Any, name: str, loop: HookLoop | None) -> tuple[Callable[..., Any] | None, bool]:
    """(the hook's method for `name`, whether async: it has no other, or `AsyncSession`)."""
    afn = next((f for n in ASYNC_NAMES[name] if callable(f := getattr(h, n, None))), None)
    fn = getattr(h, name, None)
    if afn is not None and ((loop is not None and loop.bound is not None) or not callable(fn)):
        return afn, True
    return (fn if callable(fn) else None), False


def call_hook(h: Any, state: Mapping[str, Any], loop: HookLoop | None = None) -> Update:
    if isinstance(h, FunctionHook):
        return (loop or default_loop).run(h.arun(state)) if h.is_async else h.run(state)
    fn, is_async = _form(h, "run", loop)
    if fn is None:
        raise HookError(f"not a hook (needs run(state), arun(state) or run_async(state)): {h!r}")
    return (loop or default_loop).run(fn(state)) if is_async else fn(state)


def run_hooks(
    hooks: Iterable[Any], state: Mapping[str, Any], point: HookPoint, loop: HookLoop | None = None
) -> dict[str, Any]:
    # The per-hook dicts are always there, so a hook can write into them in place.
    view = {
        **{key: {} for key in MERGED_KEYS},
        **{k: v for k, v in state.items() if v is not None or k not in MERGED_KEYS},
    }
    update: dict[str, Any] = {}
    # Broken before any hook ran (then no hook is blamed): read only when one is needed.
    already_broken: bool | None = None
    with scoped(_current_point, point):
        for h in hooks:
            given = state_for(h, view, point)
            try:
                out = call_hook(h, given, loop) or {}
            except (HookError, GraphBubbleUp):
                raise
            except Exception as exc:
                raise HookError(f"{point} hook {h!r} failed: {type(exc).__name__}: {exc}") from exc
            if isinstance(given, dict) and FLOW_CONTROL in given and FLOW_CONTROL not in view:
                # Set in place (`state["flow_control"] = {...}`): the flat keys, as if returned.
                given.update(flat_flow_control(h, {FLOW_CONTROL: given.pop(FLOW_CONTROL)}, point))
            changed = in_place_changes(h, view, given, point)
            if isinstance(out, Mapping) and FLOW_CONTROL in out:
                out = flat_flow_control(h, out, point)
            if out:
                _check_update(h, out, point)
                if not copies_state(h):
                    out = thaw(out)
            if not out and not changed:
                continue
            touched = "messages" in changed or "messages" in out
            if touched and already_broken is None:
                already_broken = _pair_problem(list(state.get("messages") or []), point) is not None
            # In-place changes first (they replace), then the returned update on top.
            _apply(changed, update, view, replace=True)
            _apply(out, update, view, replace=False)
            problem = (
                None if already_broken or not touched else _pair_problem(view["messages"], point)
            )
            if problem:
                raise HookError(f"{point} hook {h!r} broke the history: {problem}")
    return update


def _apply(
    out: Mapping[str, Any], update: dict[str, Any], view: dict[str, Any], *, replace: bool
) -> None:
    for key, value in out.items():
        if key == "messages":
            update["messages"] = [*update.get("messages", []), *value]
            view["messages"] = add_messages(view.get("messages", []), list(value))
        elif key == "usage":  # a running total: what a hook gives is added
            view["usage"] = add_usage(view.get("usage"), value)
            update["usage"] = add_usage(update.get("usage"), value)
        elif key in MERGED_KEYS and not replace:
            update[key] = view[key] = {**(view.get(key) or {}), **(value or {})}
        else:
            update[key] = view[key] = value


def flat_flow_control(h: Any, out: Mapping[str, Any], point: HookPoint) -> dict[str, Any]:
    """Haystack's nested `{"flow_control": {...}}` as the flat keys (given both ways: agreeing)."""
    nested = out[FLOW_CONTROL]
    flat = {k: v for k, v in out.items() if k != FLOW_CONTROL}
    if nested is None:
        return flat
    if not isinstance(nested, Mapping):
        raise HookError(f"{point} hook {h!r}: 'flow_control' must be a dict of {sorted(FLOW_KEYS)}")
    if unknown := set(nested) - FLOW_KEYS:
        raise HookError(
            f"{point} hook {h!r}: unknown flow_control keys {sorted(unknown)}; allowed: {sorted(FLOW_KEYS)}"
        )
    for key, value in nested.items():
        if key in flat and flat[key] != value:
            raise HookError(
                f"{point} hook {h!r} set {key!r} twice with different values (flat and in flow_control)"
            )
        flat[key] = value
    return flat


def _check_update(h: Any, out: Any, point: HookPoint) -> None:
    if not isinstance(out, Mapping):
        raise HookError(
            f"{point} hook {h!r} returned {type(out).__name__}, not a state update (a dict or None)"
        )
    if unknown := set(out) - HOOK_KEYS:
        renamed = " ('stop_run' is now called 'stop_reason')" if "stop_run" in unknown else ""
        raise HookError(
            f"{point} hook {h!r} wrote unknown state keys {sorted(unknown)}{renamed}; allowed: {sorted(HOOK_KEYS)}"
        )
    if out.get("rerun_llm") and point != "after_llm":
        raise HookError(f"{point} hook {h!r} set rerun_llm, which only after_llm hooks may set")
    messages = out.get("messages", [])
    if not isinstance(messages, list | tuple) or not all(
        isinstance(m, BaseMessage) for m in messages
    ):
        raise HookError(f"{point} hook {h!r}: 'messages' must be a list of messages")
    for key in MERGED_KEYS & set(out):
        if out[key] is not None and not isinstance(out[key], Mapping):
            raise HookError(f"{point} hook {h!r}: {key!r} must be a dict")


def _pair_problem(messages: list[BaseMessage], point: HookPoint) -> str | None:
    """Why a history breaks the tool-call contract; the model's latest calls may still
    be open after it replied, and at `after_llm` even with messages after them."""
    after_reply = point in ("after_llm", "before_tool")
    return pairing_problem(messages, open_tail=after_reply, reply_open=point == "after_llm")


class HookSet:
    """The hooks of one agent, by point: warmed up once, closed once, one event loop."""

    def __init__(self, hooks: Mapping[str, Iterable[Any]] | HookSet | None = None) -> None:
        self.points = normalise_hooks(hooks)
        self.loop = HookLoop()
        self._lock = threading.Lock()
        self._warm = False

    def __getitem__(self, point: HookPoint) -> list[Any]:
        return self.points[point]

    def __iter__(self) -> Iterator[Any]:
        """Each hook once, in first-registered order (a hook may sit at several points)."""
        return iter({id(h): h for p in HOOK_POINTS for h in self.points[p]}.values())

    def find(self, kind: type[T]) -> T | None:
        return next((h for h in self if isinstance(h, kind)), None)

    def run(self, point: HookPoint, state: Mapping[str, Any]) -> dict[str, Any]:
        if not self.points[point]:
            return {}
        self.warm_up()
        return run_hooks(self.points[point], state, point, self.loop)

    def use_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Run the hooks' async code on `loop` (under `AsyncSession`) while it runs."""
        self.loop.bound = loop

    def warm_up(self) -> None:
        with self._lock:
            if self._warm:
                return
            for h in self:
                _lifecycle(h, "warm_up", self.loop)
            self._warm = True

    async def awarm_up(self) -> None:
        """`warm_up` from async code (on the hooks' loop, which outlives the caller's)."""
        if self._warm:
            return
        for h in self:
            await _alifecycle(h, "warm_up", self.loop)
        self._warm = True

    def close(self) -> None:
        try:
            with self._lock:
                if not self._warm:
                    return
                self._warm = False
                errors = [_lifecycle(h, "close", self.loop, swallow=True) for h in self]
            if failed := [e for e in errors if e]:
                raise HookError("; ".join(failed))
        finally:
            self.loop.close()

    async def aclose(self) -> None:
        try:
            if not self._warm:
                return
            self._warm = False
            for h in self:
                await _alifecycle(h, "close", self.loop)
        finally:
            self.loop.close()


def _lifecycle(h: Any, name: str, loop: HookLoop, *, swallow: bool = False) -> str | None:
    """Call the hook's `warm_up` / `close` in the form `call_hook` picks for `run`."""
    try:
        fn, is_async = _form(h, name, loop)
        if is_async:
            loop.run(fn())  # type: ignore[misc]  # an async form is never None
        elif fn is not None:
            fn()
    except Exception as exc:
        message = f"hook {h!r} {name} failed: {type(exc).__name__}: {exc}"
        if swallow:  # close every hook even when one fails
            return message
        raise HookError(message) from exc
    return None


async def _alifecycle(h: Any, name: str, loop: HookLoop) -> None:
    try:
        fn, is_async = _form(h, name, loop)
        if is_async:
            await loop.run_async(fn())  # type: ignore[misc]  # an async form is never None
        elif fn is not None:
            fn()
    except Exception as exc:
        raise HookError(
            f"hook {h!r} {ASYNC_NAMES[name][0]} failed: {type(exc).__name__}: {exc}"
        ) from exc
