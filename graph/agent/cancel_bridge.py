"""A cancelled asyncio run stops the tool call it is in, and the call gets its answer.

The Session stops a run by setting the run's cancel event (RunContext.cancel): a
running command sees it and ends within a second, and the run goes on to end itself
("cancelled"). LangGraph Server (and any caller of `graph.astream`) cancels a run by
cancelling its asyncio task instead (`client.runs.cancel`), and a tool runs in a worker
thread that a cancelled task cannot reach. So the async form of the `run_tool` node
runs the call in that worker thread itself and, when its task is cancelled, sets the
stop event the call was given and waits briefly for the call to wind down (so its
journal entry records "stopped by the person").

The cancelled task's own writes are lost with it, which left the thread stuck at
`run_tool` with the call unanswered and no pause. So the stopped call's answer (how
long it ran, what it printed) is written to the thread as `run_tool`'s, with the run
ended "cancelled"; the task then ends without an error (LangGraph would record the
cancellation as the task's error, and the thread would read "failed") while the run
stays cancelled. The thread is idle and takes new input, and every client reads the
same status from it.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.runtime import Runtime
from langgraph.types import Command, StateUpdate

from graph.agent.context import RunContext, context_of
from graph.agent.run_end import STOPPED_BY_PERSON, stop
from graph.store.langgraph_private import CONFIG_KEY_CHECKPOINTER

# How long a cancelled run waits for its tool to notice the stop (a command is
# stopped within a second; the journal's last write follows).
WIND_DOWN_S = 5.0
# Calls of one turn cancelled together write their answers one after the other (a
# thread's lock lives while a write holds or waits for it).
_writing: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


def with_cancel_bridge(
    node: Callable[..., Any], graph: Callable[[], Pregel | None]
) -> Callable[..., Any]:
    """The async form of `node` (run_tool's signature, `stop=` keyword); `graph` gives
    the compiled graph the answer of a cancelled call is written with."""

    async def bridged(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        ctx = context_of(runtime)
        stop_event = ctx.cancel if ctx is not None else threading.Event()
        work = asyncio.ensure_future(
            run_in_executor(config, node, task, config, runtime, stop=stop_event)
        )
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop_event.set()
            with suppress(BaseException):
                done = await asyncio.wait_for(asyncio.shield(work), WIND_DOWN_S)
                if isinstance(done, Command) and (compiled := graph()) is not None:
                    await _answer_cancelled(compiled, done, config)
                    # Answered: the task ends without an error (LangGraph would record the
                    # cancellation as this task's error, and every list would say "failed").
                    # The run itself is cancelled all the same.
                    return Command(goto=())
            raise

    return bridged


async def _answer_cancelled(graph: Pregel, done: Command, config: RunnableConfig) -> None:
    """Write the stopped call's answer and the run's "cancelled" end to the thread."""
    conf = config.get("configurable") or {}
    thread_id = str(conf["thread_id"])
    target: RunnableConfig = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            CONFIG_KEY_CHECKPOINTER: conf[CONFIG_KEY_CHECKPOINTER],
        }
    }
    answer = done.update if isinstance(done.update, dict) else {}
    lock = _writing.setdefault(thread_id, asyncio.Lock())
    async with lock:
        # Calls of the same step that finished before the cancel are pending writes of
        # this checkpoint, which an update does not carry over: their answers go along.
        saved = await conf[CONFIG_KEY_CHECKPOINTER].aget_tuple(target)
        finished = [
            m
            for _, channel, value in (saved.pending_writes or [] if saved else [])
            if channel == "messages"
            for m in (value if isinstance(value, list) else [value])
        ]
        values = {
            "messages": [*finished, *answer.get("messages", [])],
            **stop(STOPPED_BY_PERSON, "cancelled"),
            "run_status": "cancelled",
        }
        # LangGraph's own update: Gatehouse's refuses tool messages for open calls from
        # clients (graph/agent/client_input.py); this one is the call's real answer.
        await CompiledStateGraph.abulk_update_state(
            graph, target, [[StateUpdate(values, "run_tool", None)]]
        )
