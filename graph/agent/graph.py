"""The Gatehouse agent graph: `model` → (`before_tool`, with such hooks) → a `run_tool`
task per free call, one `review` for the gated ones (ONE interrupt per turn) → `model`;
a reply without calls ends the run, or goes to `finish` (on_exit hooks, a stop). A
turn is about six checkpoints: a node is added only where a checkpoint buys something."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from gatehouse.graph.agent.builtin_hooks.compaction import Compaction
from gatehouse.graph.agent.cancel_bridge import with_cancel_bridge
from gatehouse.graph.agent.compiled import GatehouseGraph
from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.deps import AgentDeps, CallJournal, DecisionLog, ModelOptions
from gatehouse.graph.agent.doom_loop import DEFAULT_DOOM_LOOP_THRESHOLD
from gatehouse.graph.agent.finish import finish
from gatehouse.graph.agent.hooks import Hook, HookSet
from gatehouse.graph.agent.message_merge import merge_messages
from gatehouse.graph.agent.model_node import call_model
from gatehouse.graph.agent.offload import READ_TOOL, OffloadOptions, OutputStore, make_read_tool
from gatehouse.graph.agent.parallel import ToolSlots
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.agent.review import review
from gatehouse.graph.agent.routing import after_model, before_tool, dispatch
from gatehouse.graph.agent.state import AgentState, InputState
from gatehouse.graph.agent.tool_binding import ToolDefinitions, bind_tools
from gatehouse.graph.agent.tool_node import run_tool
from gatehouse.graph.protocol.decisions import ALL_TOOLS
from gatehouse.graph.store.langgraph_private import (
    CONFIG_KEY_STRICT_RESUME,
    RunnableCallable,
    rebuilt_as,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are Gatehouse, a careful assistant that works in the user's workspace through tools. "
    "Some tool calls wait for a person's approval. When a call is declined, respect the reason "
    "and do not retry the same call unchanged. Be concise."
)
DEFAULT_MAX_MODEL_CALLS = 25


def build_graph(
    *,
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    checkpointer: BaseCheckpointSaver | bool | None = None,
    policy: Policy | Mapping[str, Any] | None = None,
    hooks: Mapping[str, Sequence[Hook | Any]] | HookSet | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS,
    name: str = "gatehouse",
    journal: CallJournal | None = None,
    decisions: DecisionLog | None = None,
    model_options: ModelOptions | None = None,
    outputs: OutputStore | None = None,
    offload: OffloadOptions | None = None,
    doom_loop_threshold: int = DEFAULT_DOOM_LOOP_THRESHOLD,
    max_parallel_tools: int | None = None,
    compaction: Compaction | None = None,
    tool_definitions: ToolDefinitions | None = None,
) -> GatehouseGraph:
    """Compile the approval-gated agent. `policy` also takes LangChain's
    `HumanInTheLoopMiddleware(interrupt_on=...)` mapping (`"*"`: every tool). `journal`
    and `decisions` make the approval guarantees hold for every client (without them the
    graph trusts its own process). A `Compaction` hook given no model gets `model`;
    `doom_loop_threshold` 0 turns that guard off; `max_parallel_tools` None: no limit."""
    offload = offload or OffloadOptions()
    tools = list(tools)
    if outputs is not None and offload.enabled and all(t.name != READ_TOOL for t in tools):
        tools.append(make_read_tool(outputs, offload))
    tools_by_name = {t.name: t for t in tools}
    if len(tools_by_name) != len(tools):
        raise ValueError("tool names must be unique")
    if ALL_TOOLS in tools_by_name:
        raise ValueError(
            f"no tool may be named {ALL_TOOLS!r}: it stands for every tool in policies and grants"
        )
    if doom_loop_threshold < 0:
        raise ValueError(f"doom_loop_threshold must be 0 (off) or more, not {doom_loop_threshold}")
    rules = policy if isinstance(policy, Policy) else Policy.from_mapping(policy)
    rules.check_tools(tools_by_name)
    deps = AgentDeps(
        model=bind_tools(model, tools, tool_definitions),
        tools=tools_by_name,
        policy=rules,
        hooks=hooks if isinstance(hooks, HookSet) else HookSet(hooks),
        system_prompt=system_prompt,
        max_model_calls=max_model_calls,
        journal=journal,
        decisions=decisions,
        model_options=model_options or ModelOptions(),
        outputs=outputs,
        offload=offload,
        doom_loop_threshold=doom_loop_threshold,
        tool_slots=ToolSlots(max_parallel_tools),
        compaction=compaction,
    )
    for hook in deps.hooks:
        if isinstance(hook, Compaction) and hook.model is None:
            hook.model = model
    # A saver that folds the messages channel itself (graph/store/saver.py) learns how.
    if callable(register := getattr(checkpointer, "register_reducer", None)):
        register("messages", merge_messages)

    builder = StateGraph(AgentState, input_schema=InputState, context_schema=RunContext)
    builder.add_node("model", partial(call_model, deps=deps))
    builder.add_node("before_tool", partial(before_tool, deps=deps))
    builder.add_node("review", partial(review, deps=deps), destinations=("run_tool", "model"))
    # Async callers (LangGraph Server) cancel a run by its task: the bridge stops the call too.
    tool_step = partial(run_tool, deps=deps)
    compiled: list[GatehouseGraph] = []  # the bridge writes a cancelled call's answer with it
    bridge = with_cancel_bridge(tool_step, lambda: compiled[0] if compiled else None)
    builder.add_node(
        "run_tool",
        RunnableCallable(tool_step, bridge, name="run_tool", trace=False),
        destinations=("model",),
    )
    builder.add_node("finish", partial(finish, deps=deps), destinations=("model", "finish", END))
    builder.add_edge(START, "model")
    builder.add_conditional_edges(
        "model",
        partial(after_model, deps=deps),
        ["before_tool", "run_tool", "review", "model", "finish", END],
    )
    builder.add_conditional_edges(
        "before_tool", partial(dispatch, deps=deps), ["run_tool", "review", "model"]
    )
    # Gatehouse's entry points and its parts, typed (compiled.py).
    built = builder.compile(checkpointer=checkpointer, name=name)
    compiled.append(rebuilt_as(built, GatehouseGraph, deps=deps))
    return compiled[0].with_config(
        # An answer naming an interrupt that is not pending is refused, not ignored.
        configurable={CONFIG_KEY_STRICT_RESUME: True}
    )
