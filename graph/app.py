"""Assemble Gatehouse from settings: storage, tools, model, policy, hooks -> Session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph

from graph.agent import DEFAULT_SYSTEM_PROMPT, build_graph
from graph.config import Settings, load_settings
from graph.demo_model import DEMO_LABEL, DemoModel
from graph.models import describe_model, make_model, model_options
from graph.policy import Policy

if TYPE_CHECKING:
    from graph.session import Session


def _tools(settings: Settings) -> tuple[list[Any], list[Any]]:
    """(tools, closers). The full tool set lives in tools/registry.py when present."""
    try:
        from tools.registry import build_tools, close_tools
    except ImportError:
        from tools.files import make_file_tools
        from tools.workspace import Workspace

        return make_file_tools(Workspace(settings.workspace)), []
    return build_tools(settings), [close_tools]


def build_agent(
    settings: Settings,
    checkpointer: Any = None,
    *,
    journal: Any = None,
    model: BaseChatModel | None = None,
) -> tuple[CompiledStateGraph, list[Any], list[Any]]:
    tools, closers = _tools(settings)
    graph = build_graph(
        model=model or make_model(settings),
        tools=tools,
        checkpointer=checkpointer,
        policy=Policy.from_mapping(settings.policy),
        hooks=settings.hooks,
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_model_calls=settings.max_model_calls,
        journal=journal,
        model_options=model_options(settings),
    )
    return graph, tools, closers


def open_session(settings: Settings | None = None, *, model: BaseChatModel | None = None) -> Session:
    """The default Gatehouse: settings from gatehouse.toml and the environment.
    `model` replaces the one the settings name (tests, embedding)."""
    # Here, not at the top: LangGraph Server builds the graph without them.
    from graph.session import Session
    from graph.storage import open_storage

    settings = settings or load_settings()
    storage = open_storage(settings.db)
    model = model or make_model(settings)
    demo = isinstance(model, DemoModel)  # also when a custom factory returns the demo
    graph, tools, closers = build_agent(settings, storage.checkpointer, journal=storage.journal, model=model)
    return Session(
        graph,
        storage,
        tools,
        closers=closers,
        info={
            "model": DEMO_LABEL if demo else describe_model(settings),
            "demo": demo,
            "db": storage.location,
            "workspace": settings.workspace,
            "policy": Policy.from_mapping(settings.policy).summary(tools),
        },
    )


def make_graph(config: Any = None) -> CompiledStateGraph:
    """Entry point for langgraph.json: LangGraph Server provides persistence."""
    graph, _, _ = build_agent(load_settings())
    return graph
