"""Gatehouse, an approval-gated LangGraph agent: the public API (`open_session`).
Names load on first use (PEP 562): a client that only reads the protocol never
imports the rest.
"""
# ruff: noqa: F401  (the names below are this module's exports)

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The one list of exports: for type checkers as it stands, and read by `_homes` for
# the lazy loading at run time.
if TYPE_CHECKING:
    from gatehouse.graph.agent.builtin_hooks import (
        AnswerJudge,
        Budget,
        Compaction,
        RequireTool,
        SystemContext,
    )
    from gatehouse.graph.agent.emit import emit
    from gatehouse.graph.agent.graph import build_graph
    from gatehouse.graph.agent.hooks import HookSet, hook
    from gatehouse.graph.agent.policy import Policy, PolicyError
    from gatehouse.graph.protocol.decisions import DecisionRecord, StandingGrant
    from gatehouse.graph.protocol.errors import (
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
    from gatehouse.graph.protocol.events import Event, parse_event
    from gatehouse.graph.protocol.pauses import Approval, OutcomeUnknown, Pause
    from gatehouse.graph.protocol.threads import Branches, MessageView, ThreadInfo
    from gatehouse.graph.service.access import (
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
    from gatehouse.graph.service.app import build_agent, open_session
    from gatehouse.graph.service.async_session import AsyncRun, AsyncSession
    from gatehouse.graph.service.config import Settings, load_settings, location_env
    from gatehouse.graph.service.demo_model import DemoModel
    from gatehouse.graph.service.errors import describe_error
    from gatehouse.graph.service.runner import Runner
    from gatehouse.graph.service.session import Run, Session
    from gatehouse.graph.service.testing import ScriptedModel, ai, tool_call
    from gatehouse.graph.service.view import ThreadList, ThreadView
    from gatehouse.graph.store.reader import ThreadReader, open_reader, redact
    from gatehouse.graph.store.web_sessions import WebSessions


@functools.cache
def _homes() -> dict[str, str]:
    """Each exported name and its module, read from the `TYPE_CHECKING` block above."""
    block = next(n for n in ast.parse(Path(__file__).read_text()).body if isinstance(n, ast.If))
    return {
        a.name: str(i.module) for i in block.body if isinstance(i, ast.ImportFrom) for a in i.names
    }


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return list(_homes())
    home = _homes().get(name)
    if home is None:
        raise AttributeError(f"module 'gatehouse.graph' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
