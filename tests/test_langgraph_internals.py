"""LangGraph names Gatehouse's issue-33 work relies on that are not public API: if an
upgrade breaks one, this says which and where it is used."""

from __future__ import annotations

import asyncio
import inspect


def test_runnable_callable_takes_a_sync_and_an_async_form() -> None:
    # graph/agent/graph.py: run_tool's async form is the cancel bridge (cancel_bridge.py).
    from langgraph._internal._runnable import RunnableCallable

    params = inspect.signature(RunnableCallable.__init__).parameters
    assert list(params)[1:3] == ["func", "afunc"]


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

    from graph.agent.resolve import is_clear

    assert is_clear([[StateUpdate(None, END)]]) and not is_clear([[StateUpdate({"messages": []}, END)]])
