"""Gatehouse: an approval-gated LangGraph agent. Public API.

The names load on first use (PEP 562): building the graph for LangGraph Server
(`graph.app.make_graph`) then never imports the session and storage machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.agent import build_graph
    from graph.events import Event, parse_event
    from graph.policy import Policy
    from graph.review import DecisionError
    from graph.session import PendingApproval, Run, Session

_HOMES = {
    "build_graph": "graph.agent",
    "Event": "graph.events",
    "parse_event": "graph.events",
    "Policy": "graph.policy",
    "DecisionError": "graph.review",
    "PendingApproval": "graph.session",
    "Run": "graph.session",
    "Session": "graph.session",
}

__all__ = ["DecisionError", "Event", "PendingApproval", "Policy", "Run", "Session", "build_graph", "parse_event"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
