"""Assemble Gatehouse from settings: storage, tools, model, policy, hooks -> Session."""

from __future__ import annotations

import functools
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph

from gatehouse.graph.agent.builtin_hooks import Compaction, SystemContext
from gatehouse.graph.agent.deps import ModelOptions
from gatehouse.graph.agent.graph import DEFAULT_SYSTEM_PROMPT, build_graph
from gatehouse.graph.agent.hooks import HookSet
from gatehouse.graph.agent.message_merge import merge_messages
from gatehouse.graph.agent.offload import OffloadOptions
from gatehouse.graph.agent.policy import Policy, PolicyError
from gatehouse.graph.protocol.errors import ConfigError
from gatehouse.graph.service.config import Settings, load_settings
from gatehouse.graph.service.demo_model import DEMO_LABEL, DemoModel
from gatehouse.graph.service.models import describe_model, make_model
from gatehouse.graph.service.toolset import build_tools, close_tools, mcp_errors
from gatehouse.graph.store.threaded import ThreadedSaver
from gatehouse.tools.definitions import tool_definitions

log = logging.getLogger("gatehouse.config")

if TYPE_CHECKING:
    from gatehouse.graph.service.session import Session
    from gatehouse.graph.store.storage import Storage


def build_agent(
    settings: Settings,
    checkpointer: Any = None,
    *,
    journal: Any = None,
    decisions: Any = None,
    outputs: Any = None,
    model: BaseChatModel | None = None,
) -> tuple[CompiledStateGraph, list[Any], list[Any]]:
    """(the compiled agent, its tools, closers to call when done) from settings."""
    tools = build_tools(settings)
    policy = checked_policy(settings, tools)
    hooks = HookSet(settings.hooks)
    model = model or make_model(settings)
    # SystemContext named without arguments summarises the configured workspace.
    if (context := hooks.find(SystemContext)) is not None and context.workspace is None:
        context.workspace = Path(settings.workspace)
    compaction = _compaction(settings, hooks, model)
    agent = build_graph(
        model=model,
        tools=tools,
        checkpointer=checkpointer,
        policy=policy,
        hooks=hooks,
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_model_calls=settings.max_model_calls,
        journal=journal,
        decisions=decisions,
        model_options=ModelOptions(
            max_retries=settings.model_max_retries, keep_reasoning=settings.keep_reasoning
        ),
        outputs=outputs,
        offload=OffloadOptions(
            threshold_chars=settings.offload_threshold_chars, head_chars=settings.offload_head_chars
        ),
        doom_loop_threshold=settings.doom_loop_threshold,
        max_parallel_tools=settings.max_parallel_tools,
        compaction=compaction,  # `Session.compact_now` uses it also when automatic compaction is off
        tool_definitions=tool_definitions,  # made once, kept on disk: not again at every open
    )
    return agent, tools, [close_tools]


def checked_policy(settings: Settings, tools: list[Any]) -> Policy:
    """The policy; `ConfigError` naming a missing tool unless a failed MCP server may offer it."""
    names = [t.name for t in tools]
    try:
        policy = Policy.from_mapping(settings.policy)
        if (unknown := policy.unknown_tools(names)) and (failed := mcp_errors()):
            log.warning(
                "the policy names %s, which no loaded tool has; MCP servers %s could not be loaded and may "
                "offer them. Their policy applies once the servers load.",
                ", ".join(unknown),
                ", ".join(sorted(failed)),
            )
            return policy.without(unknown)
        policy.check_tools(names)
    except PolicyError as exc:
        raise ConfigError(f"{settings.source or 'the settings'}: {exc}") from exc
    return policy


def _compaction(settings: Settings, hooks: HookSet, model: BaseChatModel) -> Compaction:
    """One named under [hooks], else the built-in one, first among the before_llm hooks."""
    summariser = model
    if settings.compaction_model and not settings.model_factory:
        # A cheaper model on the same server (same base URL and key).
        summariser = make_model(replace(settings, model=settings.compaction_model))
    configured = hooks.find(Compaction)
    if configured is not None:
        configured.model = configured.model or summariser
        return configured
    compaction = Compaction(
        summariser,
        max_tokens=settings.compaction_max_tokens,
        keep_turns=settings.compaction_keep_turns,
    )
    if settings.compaction:
        hooks.points["before_llm"].insert(0, compaction)
    return compaction


def open_session(
    settings: Settings | None = None,
    *,
    model: BaseChatModel | None = None,
    source: str | None = None,
    actor: str | None = None,
) -> Session:
    """The default Gatehouse, from gatehouse.toml and the environment."""
    # Here, not at the top: LangGraph Server builds the agent without them.
    from gatehouse.graph.service.notify import attach_notifier
    from gatehouse.graph.service.session import Session
    from gatehouse.graph.store import open_storage
    from gatehouse.tools.sandbox import announce

    settings = settings or load_settings()
    storage = open_storage(settings.db)
    model = model or make_model(settings)
    demo = isinstance(model, DemoModel)  # also when a custom factory returns the demo
    try:
        agent, tools, closers = build_agent(
            settings,
            storage.checkpointer,
            journal=storage.journal,
            decisions=storage.decisions,
            outputs=storage.outputs,
            model=model,
        )
    except BaseException:
        storage.close()  # a bad policy or hook config: nothing stays open
        raise
    notifier = attach_notifier(storage.checkpointer, settings)
    return Session(
        agent,
        storage,
        tools,
        # A process that ends gives the pings due now a few seconds (notify.py).
        closers=[*closers, notifier.close] if notifier else closers,
        source=source,
        actor=actor or settings.audit_actor,
        auto_approve=settings.auto_approve,
        info={
            "model": DEMO_LABEL if demo else describe_model(settings),
            "demo": demo,
            "db": storage.location,
            "workspace": settings.workspace,
            "sandbox": announce(settings.shell_sandbox),  # logs a warning when not sandboxed
            "policy": checked_policy(settings, tools).summary(tools),
            "shell_allow": list(settings.shell_allow),
            "hooks": {point: list(entries) for point, entries in settings.hooks.items()},
            "api_key": "set" if settings.api_key else "not set",  # never the key
            "notify": settings.notify_webhook,
            "config": settings.source,
            "compaction": (
                f"on past {settings.compaction_max_tokens:,} tokens"
                if settings.compaction
                else "off (compact now only)"
            ),
            "offload": (
                f"outputs over {settings.offload_threshold_chars:,} characters stored aside"
                if settings.offload_threshold_chars
                else "off"
            ),
        },
    )


@functools.cache
def shared_storage(db: str) -> Storage:
    """One open storage per database in this process."""
    from gatehouse.graph.store import open_storage

    return open_storage(db)


def server_saver(storage: Any, **kwargs: Any) -> ThreadedSaver:
    """A saver for server runs, told how messages fold (else the index misses the first)."""
    saver = ThreadedSaver(storage.checkpointer, **kwargs)
    saver.register_reducer("messages", merge_messages)
    return saver
