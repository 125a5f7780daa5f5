"""The compiled agent's own entry points, for every client of the graph.

`GatehouseGraph` is LangGraph's compiled graph with two readings of client requests
that LangGraph takes as no-ops, made what the person meant:
- a clear of a paused review ("Mark as resolved": `update_state(None, as_node=END)`,
  or a run of just `Command(goto=END)` as Agent Chat UI sends it) rejects the open
  calls with a note (resolve.py);
- an answer to a thread that no longer waits (decided elsewhere) is refused with
  who decided (late_answers.py), instead of a run that "succeeds" doing nothing.
LangGraph Server, Studio, the SDK and a raw `graph.stream` all go through these.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateUpdate

from graph.agent.late_answers import is_answer, late_answer_error
from graph.agent.resolve import CLEAR, is_clear, is_goto_end, pending_review_calls, resolution


class GatehouseGraph(CompiledStateGraph):  # type: ignore[type-arg]
    def copy(self, update: dict[str, Any] | None = None) -> GatehouseGraph:
        # LangGraph Server runs a copy (with its checkpointer): Gatehouse's attributes
        # (the decision log, the tools, the hooks) go along.
        ours = {k: v for k, v in self.__dict__.items() if k.startswith("gatehouse_")}
        attrs = {k: v for k, v in self.__dict__.items() if k != "__orig_class__" and k not in ours}
        attrs.update(update or {})
        copied = self.__class__(**attrs)
        copied.__dict__.update(ours)
        return copied

    def bulk_update_state(self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]) -> RunnableConfig:
        if is_clear(supersteps):
            supersteps = resolution(self.get_state(config), config, self._decisions()) or supersteps
        return super().bulk_update_state(config, supersteps)

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        if is_clear(supersteps):
            state = await self.aget_state(config)
            # The decision log is written in a worker thread: the server's loop must not block.
            supersteps = await asyncio.to_thread(resolution, state, config, self._decisions()) or supersteps
        return await super().abulk_update_state(config, supersteps)

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        if (is_goto_end(input) and _thread(config) and self.checkpointer
                and pending_review_calls(self.get_state(config))):  # type: ignore[arg-type]
            # "Mark as resolved" as a run: the same as the clear, and nothing runs.
            self.bulk_update_state(config, CLEAR)  # type: ignore[arg-type]
            return
        if is_answer(input) and (thread_id := _thread(config)) and self.checkpointer:
            self._refuse_late(thread_id, self.get_state(config))  # type: ignore[arg-type]
        yield from super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        if (is_goto_end(input) and _thread(config) and self.checkpointer
                and pending_review_calls(await self.aget_state(config))):  # type: ignore[arg-type]
            await self.abulk_update_state(config, CLEAR)  # type: ignore[arg-type]
            return
        if is_answer(input) and (thread_id := _thread(config)) and self.checkpointer:
            state = await self.aget_state(config)  # type: ignore[arg-type]
            if not state.interrupts:
                await asyncio.to_thread(self._refuse_late, thread_id, state)
        async for part in super().astream(input, config, **kwargs):
            yield part

    def _refuse_late(self, thread_id: str, state: Any) -> None:
        if state.interrupts:
            return  # a question is pending: the answer is checked against it
        log = self._decisions()
        records = log.for_thread(thread_id) if log is not None else []
        if (error := late_answer_error(thread_id, state, records)) is not None:
            raise error

    def _decisions(self) -> Any:
        return getattr(self, "gatehouse_decisions", None)


def _thread(config: RunnableConfig | None) -> str | None:
    tid = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(tid) if tid else None


def as_gatehouse_graph(compiled: CompiledStateGraph) -> GatehouseGraph:  # type: ignore[type-arg]
    """The same compiled graph, with Gatehouse's entry points."""
    compiled.__class__ = GatehouseGraph
    return compiled  # type: ignore[return-value]
