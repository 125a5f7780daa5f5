"""Gatehouse: an approval-gated LangGraph agent. The public API.

    from graph import open_session
    session = open_session()                    # settings from gatehouse.toml + env
    for event in session.send(None, "write todo.md: buy milk"): ...
    pause = session.view(thread_id).pending     # Approval | OutcomeUnknown | None

The package is in layers, and imports only point down (tests/test_architecture.py):

    graph.protocol   events, pauses, answers, errors: pydantic only, what crosses the boundary
    graph.agent      the LangGraph graph: the loop, its nodes, state, review, policy, hooks
    graph.store      SQLite and Postgres: checkpoints, thread index, journal, leases
    graph.service    sessions, the runner, configuration, models, the demo model

Front ends (ui/) and embedders import this module and `graph.protocol` only. Names
load on first use (PEP 562): a client that only reads the protocol, or LangGraph
Server building the graph, never imports the session and storage machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.agent.builtin_hooks import (
        AnswerJudge,
        Budget,
        Compaction,
        RequireTool,
        SystemContext,
    )
    from graph.agent.graph import build_graph
    from graph.agent.hooks import HookSet, hook
    from graph.agent.policy import Policy, PolicyError
    from graph.protocol.decisions import DecisionRecord, StandingGrant
    from graph.protocol.errors import (
        AlreadyDecided,
        AwaitingDecision,
        CallAlreadyStarted,
        ConfigError,
        DecisionError,
        HookError,
        ImportRefused,
        InvalidThreadId,
        NothingPending,
        RunInProgress,
        StaleDecision,
        StorageError,
    )
    from graph.protocol.events import Event, parse_event
    from graph.protocol.pauses import Approval, OutcomeUnknown, Pause
    from graph.protocol.threads import Branches, MessageView, ThreadInfo
    from graph.service.access import (
        Access,
        host_name,
        install_secret,
        load_access,
        oidc_problem,
        origin_of,
        private_paths,
        read_streamlit_secrets,
        same_secret,
        secret_path,
        sign_identity,
        verify_identity,
    )
    from graph.service.app import build_agent, open_session
    from graph.service.async_session import AsyncRun, AsyncSession
    from graph.service.config import Settings, load_settings, location_env
    from graph.service.demo_model import DemoModel
    from graph.service.errors import describe_error
    from graph.service.runner import Runner
    from graph.service.session import Run, Session
    from graph.service.testing import ScriptedModel, ai, tool_call
    from graph.service.view import ThreadList, ThreadView
    from graph.store.reader import ThreadReader, open_reader
    from graph.store.web_sessions import WebSessions

_HOMES = {
    # running the agent
    "open_session": "graph.service.app",
    "build_agent": "graph.service.app",
    "build_graph": "graph.agent.graph",
    "Session": "graph.service.session",
    "Run": "graph.service.session",
    "ThreadView": "graph.service.view",
    "ThreadList": "graph.service.view",
    "AsyncSession": "graph.service.async_session",
    "AsyncRun": "graph.service.async_session",
    "Runner": "graph.service.runner",
    "Settings": "graph.service.config",
    "load_settings": "graph.service.config",
    "location_env": "graph.service.config",
    "describe_error": "graph.service.errors",
    # who may reach an approval surface (the web app, LangGraph Server)
    "Access": "graph.service.access",
    "load_access": "graph.service.access",
    "install_secret": "graph.service.access",
    "secret_path": "graph.service.access",
    "private_paths": "graph.service.access",
    "WebSessions": "graph.store.web_sessions",
    "sign_identity": "graph.service.access",
    "verify_identity": "graph.service.access",
    "same_secret": "graph.service.access",
    "origin_of": "graph.service.access",
    "host_name": "graph.service.access",
    "oidc_problem": "graph.service.access",
    "read_streamlit_secrets": "graph.service.access",
    # reading threads without LangGraph (fast, read-only: the terminal's list and inbox)
    "open_reader": "graph.store.reader",
    "ThreadReader": "graph.store.reader",
    # policy and hooks
    "Policy": "graph.agent.policy",
    "PolicyError": "graph.agent.policy",
    "HookSet": "graph.agent.hooks",
    "hook": "graph.agent.hooks",
    "emit": "graph.agent.emit",
    "AnswerJudge": "graph.agent.builtin_hooks",
    "Budget": "graph.agent.builtin_hooks",
    "Compaction": "graph.agent.builtin_hooks",
    "RequireTool": "graph.agent.builtin_hooks",
    "SystemContext": "graph.agent.builtin_hooks",
    # models that need no account: the offline demo and scripted test models
    "DemoModel": "graph.service.demo_model",
    "ScriptedModel": "graph.service.testing",
    "ai": "graph.service.testing",
    "tool_call": "graph.service.testing",
    # the protocol
    "Event": "graph.protocol.events",
    "parse_event": "graph.protocol.events",
    "Approval": "graph.protocol.pauses",
    "OutcomeUnknown": "graph.protocol.pauses",
    "Pause": "graph.protocol.pauses",
    "Branches": "graph.protocol.threads",
    "MessageView": "graph.protocol.threads",
    "ThreadInfo": "graph.protocol.threads",
    "DecisionRecord": "graph.protocol.decisions",
    "StandingGrant": "graph.protocol.decisions",
    "AlreadyDecided": "graph.protocol.errors",
    "AwaitingDecision": "graph.protocol.errors",
    "ImportRefused": "graph.protocol.errors",
    "InvalidThreadId": "graph.protocol.errors",
    "CallAlreadyStarted": "graph.protocol.errors",
    "ConfigError": "graph.protocol.errors",
    "DecisionError": "graph.protocol.errors",
    "HookError": "graph.protocol.errors",
    "NothingPending": "graph.protocol.errors",
    "RunInProgress": "graph.protocol.errors",
    "StaleDecision": "graph.protocol.errors",
    "StorageError": "graph.protocol.errors",
}

__all__ = [
    "Access",
    "host_name",
    "install_secret",
    "load_access",
    "oidc_problem",
    "origin_of",
    "read_streamlit_secrets",
    "same_secret",
    "secret_path",
    "private_paths",
    "WebSessions",
    "sign_identity",
    "verify_identity",
    "AlreadyDecided",
    "AwaitingDecision",
    "CallAlreadyStarted",
    "AnswerJudge",
    "Approval",
    "AsyncRun",
    "AsyncSession",
    "ThreadList",
    "ThreadView",
    "Branches",
    "Budget",
    "Compaction",
    "ConfigError",
    "DecisionError",
    "DecisionRecord",
    "StandingGrant",
    "DemoModel",
    "Event",
    "HookError",
    "HookSet",
    "ImportRefused",
    "InvalidThreadId",
    "MessageView",
    "NothingPending",
    "OutcomeUnknown",
    "Pause",
    "Policy",
    "PolicyError",
    "RequireTool",
    "Run",
    "RunInProgress",
    "Runner",
    "ScriptedModel",
    "Session",
    "Settings",
    "StaleDecision",
    "StorageError",
    "SystemContext",
    "ThreadInfo",
    "ThreadReader",
    "ai",
    "build_agent",
    "build_graph",
    "describe_error",
    "emit",
    "hook",
    "load_settings",
    "location_env",
    "open_reader",
    "open_session",
    "parse_event",
    "tool_call",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
