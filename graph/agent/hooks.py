"""Hooks: user code that changes a run at fixed points without forking the graph.

Points: `before_llm` (before each model call), `before_tool` (after the model asked
for tools, before any runs or is reviewed), `on_exit` (the agent is about to stop).
A hook is any object with `run(state) -> update | None` (or only `arun` for async
code), or a function wrapped with `@hook`. Hooks at one point run in list order;
each sees the updates of those before. One hook object may sit at several points.

Lifecycle: a hook may define `warm_up()` / `close()` (or `awarm_up()` / `aclose()`).
A `HookSet` calls `warm_up` once, before the first hook runs (so a hook opens its
clients lazily, in the process that runs the graph), and `close` once when the
agent closes (`Session.close`).

Updates are checked before they reach the state: a hook that raises, returns
something that is not a mapping, writes an unknown key or leaves a tool call
without its answer fails the run with `HookError`; nothing it returned is written,
so the thread stays at its last checkpoint and `Session.retry` continues it.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from langchain_core.messages import BaseMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph.message import add_messages

from graph.agent.history import pairing_problem
from graph.agent.state import HOOK_KEYS, MERGED_KEYS
from graph.protocol.errors import HookError

HookPoint = Literal["before_llm", "before_tool", "on_exit"]
HOOK_POINTS: tuple[HookPoint, ...] = ("before_llm", "before_tool", "on_exit")

# The point whose hooks are running, for a hook registered at several points.
_current_point: contextvars.ContextVar[HookPoint | None] = contextvars.ContextVar(
    "gatehouse_hook_point", default=None
)

T = TypeVar("T")
Update = Mapping[str, Any] | None


@runtime_checkable
class Hook(Protocol):
    def run(self, state: Mapping[str, Any]) -> Update: ...


@runtime_checkable
class AsyncHook(Protocol):
    async def arun(self, state: Mapping[str, Any]) -> Update: ...


class FunctionHook:
    """A plain function (sync or async) `state -> update | None` as a hook."""

    def __init__(self, fn: Callable[[Mapping[str, Any]], Update | Awaitable[Update]]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "hook")
        self._async = inspect.iscoroutinefunction(fn)

    def run(self, state: Mapping[str, Any]) -> Update:
        out = self.fn(state)
        return run_sync(out) if inspect.isawaitable(out) else out  # type: ignore[return-value]

    async def arun(self, state: Mapping[str, Any]) -> Update:
        out = self.fn(state)
        return await out if inspect.isawaitable(out) else out  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"hook({self.name})"


def hook(fn: Callable[[Mapping[str, Any]], Update | Awaitable[Update]]) -> FunctionHook:
    """Make a plain function `state -> update | None` (or an async one) a hook."""
    return FunctionHook(fn)


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a coroutine to completion from sync code (the graph's nodes are sync).
    Inside a running event loop it runs on a fresh loop in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(awaitable))
    # Carry the context along: `emit` finds the run's stream writer through it.
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, _as_coroutine(awaitable)).result()


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def current_point() -> HookPoint | None:
    """The point whose hooks are running now (None outside a hook)."""
    return _current_point.get()


def load_hook(spec: Any) -> Any:
    """A hook object, a function, an import path "package.module:attr" (a class there
    is instantiated without arguments), or, from a config file, a table
    `{path = "package.module:Class", args = {...}}` (the class called with `args`)."""
    if isinstance(spec, Mapping):
        if set(spec) - {"path", "args"} or not isinstance(spec.get("path"), str):
            raise ValueError(f"a hook table needs 'path' (and optionally 'args'), got {dict(spec)!r}")
        factory = _import(spec["path"])
        return load_hook(factory(**dict(spec.get("args") or {})))
    if isinstance(spec, str):
        obj = _import(spec)
        if isinstance(obj, type):
            obj = obj()
        return load_hook(obj)
    if isinstance(spec, type):
        return load_hook(spec())
    if isinstance(spec, Hook | AsyncHook):
        return spec
    if callable(spec):
        return FunctionHook(spec)
    raise TypeError(f"not a hook (needs run(state) or arun(state)): {spec!r}")


def _import(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not attr:
        raise ValueError(f"hook path {path!r} must look like 'package.module:name'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load hook {path!r}: {exc}") from exc


def normalise_hooks(hooks: Mapping[str, Iterable[Any]] | HookSet | None) -> dict[HookPoint, list[Any]]:
    if isinstance(hooks, HookSet):
        return {p: list(hooks.points[p]) for p in HOOK_POINTS}
    result: dict[HookPoint, list[Any]] = {p: [] for p in HOOK_POINTS}
    for point, items in (hooks or {}).items():
        if point not in HOOK_POINTS:
            raise ValueError(f"unknown hook point {point!r}; use one of {', '.join(HOOK_POINTS)}")
        if isinstance(items, str | Mapping) or not isinstance(items, Iterable):
            items = [items]
        result[point] = [load_hook(h) for h in items]  # type: ignore[index]
    return result


def call_hook(h: Any, state: Mapping[str, Any]) -> Update:
    """Prefer the sync `run`; an async-only hook's `arun` runs on an event loop."""
    if callable(getattr(h, "run", None)):
        return h.run(state)
    return run_sync(h.arun(state))


def run_hooks(hooks: Iterable[Any], state: Mapping[str, Any], point: HookPoint) -> dict[str, Any]:
    """Run hooks in order; return one update that the node writes to the state."""
    token = _current_point.set(point)
    try:
        return _run_hooks(hooks, state, point)
    finally:
        _current_point.reset(token)


def _run_hooks(hooks: Iterable[Any], state: Mapping[str, Any], point: HookPoint) -> dict[str, Any]:
    view = dict(state)
    update: dict[str, Any] = {}
    # Whether the history was broken before any hook ran (then a hook is not blamed):
    # worked out only when a hook writes messages, as walking the history costs.
    already_broken: bool | None = None
    for h in hooks:
        try:
            out = call_hook(h, view)
        except (HookError, GraphBubbleUp):
            raise
        except Exception as exc:
            raise HookError(f"{point} hook {h!r} failed: {type(exc).__name__}: {exc}") from exc
        if not out:
            continue
        _check_update(h, out, point)
        if "messages" in out and already_broken is None:
            already_broken = pairing_problem(list(state.get("messages") or []), open_tail=point == "before_tool") is not None
        for key, value in out.items():
            if key == "messages":
                update["messages"] = [*update.get("messages", []), *value]
                view["messages"] = add_messages(view.get("messages", []), list(value))
            elif key in MERGED_KEYS:
                merged = {**(view.get(key) or {}), **(value or {})}
                update[key] = view[key] = merged
            else:
                update[key] = view[key] = value
        problem = (
            None if already_broken or "messages" not in out
            else pairing_problem(view["messages"], open_tail=point == "before_tool")
        )
        if problem:
            raise HookError(f"{point} hook {h!r} broke the history: {problem}")
    return update


def _check_update(h: Any, out: Any, point: HookPoint) -> None:
    if not isinstance(out, Mapping):
        raise HookError(f"{point} hook {h!r} returned {type(out).__name__}, not a state update (a dict or None)")
    if unknown := set(out) - HOOK_KEYS:
        renamed = " ('stop_run' is now called 'stop_reason')" if "stop_run" in unknown else ""
        raise HookError(
            f"{point} hook {h!r} wrote unknown state keys {sorted(unknown)}{renamed}; allowed: {sorted(HOOK_KEYS)}"
        )
    messages = out.get("messages", [])
    if not isinstance(messages, list | tuple) or not all(isinstance(m, BaseMessage) for m in messages):
        raise HookError(f"{point} hook {h!r}: 'messages' must be a list of messages")
    for key in MERGED_KEYS & set(out):
        if out[key] is not None and not isinstance(out[key], Mapping):
            raise HookError(f"{point} hook {h!r}: {key!r} must be a dict")


class HookSet:
    """The hooks of one agent, by point, with their lifecycle (warm up once, close once)."""

    def __init__(self, hooks: Mapping[str, Iterable[Any]] | HookSet | None = None) -> None:
        self.points = normalise_hooks(hooks)
        self._lock = threading.Lock()
        self._warm = False

    def __getitem__(self, point: HookPoint) -> list[Any]:
        return self.points[point]

    def __iter__(self) -> Iterator[Any]:
        """Each hook once, in first-registered order (a hook may sit at several points)."""
        seen: set[int] = set()
        for point in HOOK_POINTS:
            for h in self.points[point]:
                if id(h) not in seen:
                    seen.add(id(h))
                    yield h

    def find(self, kind: type[T]) -> T | None:
        return next((h for h in self if isinstance(h, kind)), None)

    def run(self, point: HookPoint, state: Mapping[str, Any]) -> dict[str, Any]:
        if not self.points[point]:
            return {}
        self.warm_up()
        return run_hooks(self.points[point], state, point)

    # -- lifecycle -----------------------------------------------------------
    @property
    def warm(self) -> bool:
        return self._warm

    def warm_up(self) -> None:
        with self._lock:
            if self._warm:
                return
            for h in self:
                _lifecycle(h, "warm_up", "awarm_up")
            self._warm = True

    async def awarm_up(self) -> None:
        if self._warm:
            return
        for h in self:
            await _alifecycle(h, "warm_up", "awarm_up")
        self._warm = True

    def close(self) -> None:
        with self._lock:
            if not self._warm:
                return
            self._warm = False
            errors = [_lifecycle(h, "close", "aclose", swallow=True) for h in self]
        if failed := [e for e in errors if e]:
            raise HookError("; ".join(failed))

    async def aclose(self) -> None:
        if not self._warm:
            return
        self._warm = False
        for h in self:
            await _alifecycle(h, "close", "aclose")


def _lifecycle(h: Any, sync_name: str, async_name: str, *, swallow: bool = False) -> str | None:
    try:
        if callable(fn := getattr(h, sync_name, None)):
            fn()
        elif callable(afn := getattr(h, async_name, None)):
            run_sync(afn())
    except Exception as exc:
        message = f"hook {h!r} {sync_name} failed: {type(exc).__name__}: {exc}"
        if swallow:  # close every hook even when one fails
            return message
        raise HookError(message) from exc
    return None


async def _alifecycle(h: Any, sync_name: str, async_name: str) -> None:
    try:
        if callable(afn := getattr(h, async_name, None)):
            await afn()
        elif callable(fn := getattr(h, sync_name, None)):
            fn()
    except Exception as exc:
        raise HookError(f"hook {h!r} {async_name} failed: {type(exc).__name__}: {exc}") from exc
