"""The compiled agent's own entry points, for every client: a clear of a paused review
rejects the open calls (resolve.py); an answer to a thread that no longer waits is
refused with who decided (late_answers.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateUpdate

from gatehouse.graph.agent.client_input import (
    akeep_pause,
    carries_tool_messages,
    edit_answers,
    keep_pause,
    refuse_answering_edit,
    screen_run_input,
)
from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import as_the_run
from gatehouse.graph.agent.hooks import HookSet
from gatehouse.graph.agent.late_answers import has_interrupts, is_answer, late_answer_error
from gatehouse.graph.agent.resolve import (
    CLEAR,
    is_clear,
    is_goto_end,
    owner_only,
    pending_review_calls,
    resolution,
)
from gatehouse.graph.store.langgraph_private import CONFIG_KEY_CHECKPOINTER

_DONE = object()  # a stream that ended before its first chunk


class GatehouseGraph(CompiledStateGraph):
    """A subclass, as LangGraph Server takes only a `Pregel` (built by `rebuilt_as`)."""

    def __init__(self, *, deps: AgentDeps, **attributes: Any) -> None:
        super().__init__(**attributes)
        # An attribute: LangGraph's `copy` (the Server runs a copy) passes it along.
        self.deps = deps

    @property
    def gatehouse_tools(self) -> Mapping[str, BaseTool]:
        """Its tools, the built-in ones included: the Session checks edits against them."""
        return self.deps.tools

    @property
    def gatehouse_hooks(self) -> HookSet:
        """The Session warms up and closes the hooks with the agent (graph/agent/hooks.py)."""
        return self.deps.hooks

    def bulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        owner_only(supersteps)
        before = self.get_state(config)
        if is_clear(supersteps):
            supersteps = resolution(before, config, self.deps) or supersteps
            return super().bulk_update_state(config, supersteps)
        # A state edit never answers an open call, and leaves a pause in place (client_input.py).
        refuse_answering_edit(edit_answers(u[0] for s in supersteps for u in s), before.values)
        done = super().bulk_update_state(config, supersteps)
        keep_pause(self, bool(before.interrupts), done)
        return done

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        owner_only(supersteps)
        before = await self.aget_state(config)
        if is_clear(supersteps):
            # The decision log is written in a worker thread: the server's loop must not block.
            resolved = await asyncio.to_thread(resolution, before, config, self.deps)
            return await super().abulk_update_state(config, resolved or supersteps)
        refuse_answering_edit(edit_answers(u[0] for s in supersteps for u in s), before.values)
        done = await super().abulk_update_state(config, supersteps)
        await akeep_pause(self, bool(before.interrupts), done)
        return done

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        _with_context(kwargs)
        if config is not None and (thread_id := self._saved_thread(config)):
            if carries_tool_messages(input):
                # A pause closes only by a decision (client_input.py).
                input, config = screen_run_input(input, config, self.get_state(config).values)
            if is_goto_end(input) and pending_review_calls(self.get_state(config)):
                # "Mark as resolved" as a run: the same as the clear, and nothing runs.
                with as_the_run(config):
                    self.bulk_update_state(config, CLEAR)
                return
            if is_answer(input):
                waits, handing_over = self._read_waiting(config)
                if not waits:
                    self._refuse_late(thread_id, self.get_state(config))
                elif handing_over is not None:
                    # The checkpoint just read is the one LangGraph reads first: handed over.
                    stream = super().stream(input, config, **kwargs)
                    with handing_over:
                        first = next(stream, _DONE)
                    if first is not _DONE:
                        yield first
                        yield from stream
                    return
        yield from super().stream(input, config, **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        _with_context(kwargs)
        if config is not None and (thread_id := self._saved_thread(config)):
            if carries_tool_messages(input):
                state = await self.aget_state(config)
                input, config = screen_run_input(input, config, state.values)
            if is_goto_end(input) and pending_review_calls(await self.aget_state(config)):
                with as_the_run(config):
                    await self.abulk_update_state(config, CLEAR)
                return
            if is_answer(input) and not await self._awaits(config):
                state = await self.aget_state(config)
                await asyncio.to_thread(self._refuse_late, thread_id, state)
        async for part in super().astream(input, config, **kwargs):
            yield part

    def _saved_thread(self, config: RunnableConfig) -> str | None:
        tid = (config.get("configurable") or {}).get("thread_id")
        return str(tid) if tid and self.checkpointer else None

    def _read_waiting(
        self, config: RunnableConfig
    ) -> tuple[bool, AbstractContextManager[None] | None]:
        """(whether the thread waits, from its pending writes: ~0.4 ms, not a snapshot's
        ~5 ms; a block handing the checkpoint read to the run's first read, if any)."""
        read = self._state_read(config)
        if read is None:
            return False, None
        saver, read_config, live = read
        saved = saver.get_tuple(read_config)
        waits = saved is not None and has_interrupts(saved.pending_writes or [], live=live)
        hand_over = getattr(saver, "handing_over", None)
        return waits, hand_over(read_config, saved) if hand_over is not None else None

    async def _awaits(self, config: RunnableConfig) -> bool:
        read = self._state_read(config)
        if read is None:
            return False
        saver, read_config, live = read
        saved = await saver.aget_tuple(read_config)
        return saved is not None and has_interrupts(saved.pending_writes or [], live=live)

    def _state_read(
        self, config: RunnableConfig
    ) -> tuple[BaseCheckpointSaver, RunnableConfig, bool] | None:
        """The saver and config `get_state` reads with, and whether it reads the live
        state; None when it reads elsewhere (a subgraph, a lent saver)."""
        saver = self.checkpointer
        if not isinstance(saver, BaseCheckpointSaver):
            return None
        merged = merge_configs(self.config, config) if self.config else config
        conf = merged.get("configurable") or {}
        if conf.get("checkpoint_ns") or CONFIG_KEY_CHECKPOINTER in conf:
            return None
        configurable = {**conf, "thread_id": str(conf["thread_id"])}
        return saver, {**merged, "configurable": configurable}, "checkpoint_id" not in conf

    def _refuse_late(self, thread_id: str, state: Any) -> None:
        if state.interrupts:
            return  # a question is pending: the answer is checked against it
        log = self.deps.decisions
        records = log.for_thread(thread_id) if log is not None else []
        if (error := late_answer_error(thread_id, state, records)) is not None:
            raise error


def _with_context(kwargs: dict[str, Any]) -> None:
    """A run without a context (a raw `invoke`) gets a fresh one (for the gate's verdicts);
    one given again starts with no read of the decision log kept (gate.py: a step's)."""
    ctx = kwargs.get("context")
    if ctx is None:
        kwargs["context"] = RunContext()
    elif isinstance(ctx, RunContext):
        ctx.forget_reads()


def parts_of(agent: object) -> AgentDeps | None:
    return agent.deps if isinstance(agent, GatehouseGraph) else None
