"""LangGraph names Gatehouse relies on that are not public API: if an upgrade breaks
one, this says which and what in Gatehouse depends on it.

Every row of the fence's table (graph/store/langgraph_private.py `SURFACE`) is
checked against the installed LangGraph: it still exists where the row says, the
fence's copy or import is the same thing, and it still behaves as Gatehouse uses it.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from gatehouse.graph.store import langgraph_private as fence
from gatehouse.graph.store.langgraph_private import SURFACE, Private


def theirs(row: Private) -> Any:
    module, _, attribute = row.theirs.partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def _delta_snapshot(cls: Any) -> None:
    # A seed the savers hand back from their cache; LangGraph unwraps `.value`.
    assert cls([1, 2]).value == [1, 2]
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    assert serde.loads_typed(serde.dumps_typed(cls(["a"]))) == cls(["a"])


def _get_overwrite(fn: Callable[[Any], tuple[bool, Any]]) -> None:
    from langgraph.types import Overwrite

    assert fn(Overwrite([1])) == (True, [1]) and fn([1]) == (False, None)


def _messages_delta_reducer(fn: Callable[..., Any]) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

    a, b = HumanMessage("a", id="1"), AIMessage("b", id="2")
    assert fn([a], [[b]]) == [a, b]  # (state, a list of batches)
    assert fn([a, b], [[RemoveMessage(id="1")]]) == [b]


def _runnable_callable(cls: Any) -> None:
    # run_tool's async form is the cancel bridge (graph/agent/cancel_bridge.py).
    assert list(inspect.signature(cls.__init__).parameters)[1:3] == ["func", "afunc"]

    async def twice(x: int) -> int:
        return 2 * x

    runnable = cls(lambda x: x, twice, name="t", trace=False)
    assert runnable.invoke(3) == 3 and asyncio.run(runnable.ainvoke(3)) == 6


def _pg_connection(fn: Callable[..., Any]) -> None:
    assert inspect.isfunction(fn) and list(inspect.signature(fn).parameters) == ["conn"]
    with pytest.raises(TypeError), fn(object()):
        pass


def _method(*params: str) -> Callable[[Any], None]:
    def check(method: Any) -> None:
        assert list(inspect.signature(method).parameters) == ["self", *params]

    return check


def _has_task_path(value: Any) -> None:
    assert value is True  # the class default; a file without the column sets False


def _branch_to(value: str) -> None:
    assert (
        value.format("") == fence.BRANCH_TO and value.format("model") == f"{fence.BRANCH_TO}model"
    )


def _tiny_graph() -> Any:
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import StateGraph

    class S(TypedDict):
        n: int

    builder = StateGraph(S)
    builder.add_node("step", lambda s: {"n": s["n"] + 1})
    builder.set_entry_point("step")
    return builder.compile(checkpointer=InMemorySaver())


def _spy_class(calls: list[str]) -> type:
    """A subclass of the compiled graph recording each entry point it is entered by."""
    from langgraph.graph.state import CompiledStateGraph

    def recording(name: str) -> Any:
        inherited = getattr(CompiledStateGraph, name)
        if inspect.isasyncgenfunction(inherited):

            async def agen(self: Any, *args: Any, **kwargs: Any) -> Any:
                calls.append(name)
                async for part in inherited(self, *args, **kwargs):
                    yield part

            return agen
        if inspect.iscoroutinefunction(inherited):

            async def coro(self: Any, *args: Any, **kwargs: Any) -> Any:
                calls.append(name)
                return await inherited(self, *args, **kwargs)

            return coro

        def sync(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return inherited(self, *args, **kwargs)

        return sync

    return type("Spy", (CompiledStateGraph,), {n: recording(n) for n in fence.ENTRY_POINTS})


def _entry_points(pregel: type) -> None:
    # Each client's way in reaches the method Gatehouse overrides.
    calls: list[str] = []
    graph = fence.rebuilt_as(_tiny_graph(), _spy_class(calls))
    config: Any = {"configurable": {"thread_id": "t"}}
    assert all(callable(getattr(pregel, name)) for name in fence.ENTRY_POINTS)
    graph.invoke({"n": 0}, config)
    assert calls == ["stream"], f"invoke no longer goes through stream: {calls}"
    calls.clear()

    async def server_ways() -> None:
        await graph.ainvoke({"n": 0}, config)
        assert calls == ["astream"], f"ainvoke no longer goes through astream: {calls}"
        calls.clear()
        async for _ in graph.astream_events({"n": 0}, config, version="v2"):
            pass
        assert calls == ["astream"], f"astream_events no longer goes through astream: {calls}"
        calls.clear()
        await graph.aupdate_state(config, {"n": 5})
        assert calls == ["abulk_update_state"], f"aupdate_state: {calls}"
        calls.clear()

    asyncio.run(server_ways())
    graph.update_state(config, {"n": 7})
    assert calls == ["bulk_update_state"], f"update_state: {calls}"


def _rebuilt_as(copy: Callable[..., Any]) -> None:
    # The subclass and what it carries survive LangGraph's copies (with_config, the server's).

    class Carrying(_spy_class([])):  # type: ignore[misc]
        def __init__(self, *, deps: str, **attributes: Any) -> None:
            super().__init__(**attributes)
            self.deps = deps

    cls = Carrying
    graph = fence.rebuilt_as(_tiny_graph(), cls, deps="parts")
    for copied in (graph.with_config(tags=["x"]), copy(graph, {"name": "other"})):
        assert type(copied) is cls and copied.deps == "parts"
    assert graph.invoke({"n": 1}, {"configurable": {"thread_id": "c"}}) == {"n": 2}


# Behaviour checks for the rows whose thing is more than a value to compare.
BEHAVIOUR: dict[str, Callable[[Any], None]] = {
    "DeltaSnapshot": _delta_snapshot,
    "get_overwrite": _get_overwrite,
    "messages_delta_reducer": _messages_delta_reducer,
    "RunnableCallable": _runnable_callable,
    "pg_connection": _pg_connection,
    "pg_dump_blobs": _method("thread_id", "checkpoint_ns", "values", "versions"),
    "pg_load_checkpoint_tuple": _method("value"),
    "pg_dump_writes": _method(
        "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path", "writes"
    ),
    "sqlite_has_task_path": _has_task_path,
    "BRANCH_TO": _branch_to,
    "ENTRY_POINTS": _entry_points,
    "rebuilt_as": _rebuilt_as,
}


@pytest.mark.parametrize("row", SURFACE, ids=[row.ours for row in SURFACE])
def test_each_private_name_still_holds(row: Private) -> None:
    broke = (
        f"LangGraph's {row.theirs} ({row.ours} in graph/store/langgraph_private.py) changed; it is needed for: "
        f"{row.needed_by}"
    )
    try:
        found = theirs(row)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{broke}\n{exc!r}")
    ours = getattr(fence, row.ours)
    check = BEHAVIOUR.get(row.ours)
    try:
        if row.ours in fence._LAZY:  # imported on first use: the very object
            assert ours is found
        elif not callable(ours) and check is None:  # a literal copy: the same value
            assert ours == found, f"copied as {ours!r}, LangGraph has {found!r}"
        if check is not None:  # a wrapper of a method, or more than a value: how Gatehouse uses it
            check(found)
    except AssertionError as exc:
        pytest.fail(f"{broke}\n{exc}")


def test_every_private_name_has_a_row_and_a_check() -> None:
    """A name added to the fence without a row (or an object without a behaviour check)
    would break unnoticed by the test above."""
    rows = {row.ours for row in SURFACE}
    exported = set(fence.__all__) - {"SURFACE", "Private"}
    assert exported == rows, exported ^ rows
    objects = {
        row.ours
        for row in SURFACE
        if not isinstance(getattr(fence, row.ours), str | int | frozenset)
    }
    assert objects <= set(BEHAVIOUR), objects - set(BEHAVIOUR)


def test_gatehouse_overrides_only_the_fenced_entry_points() -> None:
    """An override the fence does not list has no upgrade check above."""
    from langgraph.graph.state import CompiledStateGraph

    from gatehouse.graph.agent.compiled import GatehouseGraph

    overridden = {
        name
        for name, value in vars(GatehouseGraph).items()
        if callable(value) and not name.startswith("_") and hasattr(CompiledStateGraph, name)
    }
    assert overridden == set(fence.ENTRY_POINTS)


def test_the_fence_loads_no_langgraph_until_an_object_is_asked_for() -> None:
    """The terminal's read-only commands import the fence's literals (plain.py, reader.py)."""
    import subprocess
    import sys

    code = (
        "import sys, gatehouse.graph.store.langgraph_private as f; f.INTERRUPT; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'langgraph'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_dev_runtime_keeps_threads_and_runs_in_its_store() -> None:
    # graph/service/server_sync.py writes the dev server's thread list.
    from langgraph_runtime_inmem.database import connect
    from langgraph_runtime_inmem.ops import Threads

    assert "if_exists" in inspect.signature(Threads.put).parameters

    async def look() -> None:
        async with connect() as conn:
            assert isinstance(conn.store["threads"], list) and isinstance(conn.store["runs"], list)

    asyncio.run(look())


def test_a_clear_is_an_update_of_none_as_end() -> None:
    # graph/agent/resolve.py: "Mark as resolved" arrives as one StateUpdate(None, END).
    from langgraph.constants import END
    from langgraph.types import StateUpdate

    from gatehouse.graph.agent.resolve import is_clear

    assert is_clear([[StateUpdate(None, END)]]) and not is_clear(
        [[StateUpdate({"messages": []}, END)]]
    )
