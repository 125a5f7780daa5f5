"""Gatehouse: an approval-gated LangGraph agent. Public API."""

from graph.agent import build_graph
from graph.events import Event, parse_event
from graph.policy import Policy
from graph.review import DecisionError
from graph.session import PendingApproval, Run, Session

__all__ = ["DecisionError", "Event", "PendingApproval", "Policy", "Run", "Session", "build_graph", "parse_event"]
