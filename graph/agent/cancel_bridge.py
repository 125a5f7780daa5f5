"""A cancelled asyncio run stops the tool call it is in, and the call gets its answer.

LangGraph Server cancels the asyncio task, which cannot reach a tool in its worker
thread. So the async `run_tool` runs the call in that thread itself and, on
cancellation, sets the call's stop event and waits briefly for it to wind down. The
cancelled task's writes are lost with it, so the stopped call's answer is written as
`run_tool`'s, the run ended "cancelled", and the task ends without an error (else the
thread would read "failed").
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

from gatehouse.graph.agent.context import RunContext, context_of
from gatehouse.graph.agent.run_end import STOPPED_BY_PERSON, stop
from gatehouse.graph.store.langgraph_private import CONFIG_KEY_CHECKPOINTER

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
                    # Answered: no error for the task (every list would say "failed").
                    return Command(goto=())
            raise

    return bridged


async def _answer_cancelled(graph: Pregel, done: Command, config: RunnableConfig) -> None:
    conf = config.get("configurable") or {}
    thread_id, saver = str(conf["thread_id"]), conf[CONFIG_KEY_CHECKPOINTER]
    at = {"thread_id": thread_id, "checkpoint_ns": "", CONFIG_KEY_CHECKPOINTER: saver}
    target: RunnableConfig = {"configurable": at}
    answer = done.update if isinstance(done.update, dict) else {}
    lock = _writing.setdefault(thread_id, asyncio.Lock())
    async with lock:
        # Calls of the same step that finished before the cancel are pending writes of
        # this checkpoint, which an update does not carry over: their answers go along.
        saved = await saver.aget_tuple(target)
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
