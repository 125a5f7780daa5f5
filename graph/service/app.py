"""Assemble Gatehouse from settings: storage, tools, model, policy, hooks -> Session."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph

from graph.agent.builtin_hooks import SystemContext
from graph.agent.graph import DEFAULT_SYSTEM_PROMPT, build_graph
from graph.agent.hooks import HookSet
from graph.agent.policy import Policy
from graph.service.config import Settings, load_settings
from graph.service.demo_model import DEMO_LABEL, DemoModel
from graph.service.models import describe_model, make_model, model_options
from graph.service.toolset import build_tools, close_tools

if TYPE_CHECKING:
    from graph.service.session import Session
    from graph.store.storage import Storage


def build_agent(
    settings: Settings,
    checkpointer: Any = None,
    *,
    journal: Any = None,
    decisions: Any = None,
    model: BaseChatModel | None = None,
) -> tuple[CompiledStateGraph, list[Any], list[Any]]:
    """(the compiled agent, its tools, closers to call when done) from settings."""
    tools = build_tools(settings)
    hooks = HookSet(settings.hooks)
    # Named in gatehouse.toml without arguments, SystemContext summarises the
    # configured workspace.
    if (context := hooks.find(SystemContext)) is not None and context.workspace is None:
        context.workspace = Path(settings.workspace)
    agent = build_graph(
        model=model or make_model(settings),
        tools=tools,
        checkpointer=checkpointer,
        policy=Policy.from_mapping(settings.policy),
        hooks=hooks,
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_model_calls=settings.max_model_calls,
        journal=journal,
        decisions=decisions,
        model_options=model_options(settings),
    )
    return agent, tools, [close_tools]


def open_session(settings: Settings | None = None, *, model: BaseChatModel | None = None) -> Session:
    """The default Gatehouse: settings from gatehouse.toml and the environment.
    `model` replaces the one the settings name (tests, embedding)."""
    # Here, not at the top: LangGraph Server builds the agent without them.
    from graph.service.session import Session
    from graph.store import open_storage
    from tools.sandbox import announce

    settings = settings or load_settings()
    storage = open_storage(settings.db)
    model = model or make_model(settings)
    demo = isinstance(model, DemoModel)  # also when a custom factory returns the demo
    agent, tools, closers = build_agent(
        settings, storage.checkpointer, journal=storage.journal, decisions=storage.decisions, model=model
    )
    return Session(
        agent,
        storage,
        tools,
        closers=closers,
        info={
            "model": DEMO_LABEL if demo else describe_model(settings),
            "demo": demo,
            "db": storage.location,
            "workspace": settings.workspace,
            "sandbox": announce(settings.shell_sandbox),  # logs a warning when not sandboxed
            "policy": Policy.from_mapping(settings.policy).summary(tools),
        },
    )


@functools.cache
def shared_storage(db: str) -> Storage:
    """One open storage per database in this process: the server's agent (journal,
    decision log) and its checkpointer load separately but share it."""
    from graph.store import open_storage

    return open_storage(db)
