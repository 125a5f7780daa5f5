"""A cancelled asyncio run stops the tool call it is in.

The Session stops a run by setting the run's cancel event (RunContext.cancel): a
running command sees it and ends within a second. LangGraph Server (and any caller of
`graph.astream`) cancels a run by cancelling its asyncio task instead
(`client.runs.cancel`), and a tool runs in a worker thread that a cancelled task
cannot reach: the command went on until it finished. So the async form of the
`run_tool` node runs the call in that worker thread itself and, when its task is
cancelled, sets the stop event the call was given, waits briefly for the call to
wind down (so its journal entry records "stopped by the person"), then lets the
cancellation go on.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langgraph.runtime import Runtime

from graph.agent.context import RunContext, context_of

# How long a cancelled run waits for its tool to notice the stop (a command is
# stopped within a second; the journal's last write follows).
WIND_DOWN_S = 5.0


def with_cancel_bridge(node: Callable[..., Any]) -> Callable[..., Any]:
    """The async form of `node` (run_tool's signature, `stop=` keyword)."""

    async def bridged(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        ctx = context_of(runtime)
        stop = ctx.cancel if ctx is not None else threading.Event()
        work = asyncio.ensure_future(
            run_in_executor(config, node, task, config, runtime, stop=stop)
        )
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            with suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(work), WIND_DOWN_S)
            raise

    return bridged
