"""What the agent's nodes need besides the state, passed to them explicitly.

Nodes are top-level functions taking `deps` (graph/agent/graph.py binds it), so a
test can call one with a state dict and its own deps, with no database or Session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from graph.agent.hooks import HookSet
from graph.agent.policy import Policy


class JournalEntry(Protocol):
    """A journaled call (graph/store/journal.py)."""

    started_at: float
    attempts: int
    result: ToolMessage | None

    @property
    def finished(self) -> bool: ...


class CallJournal(Protocol):
    """Where side-effecting calls are written down before and after they run, so a
    crash never silently repeats one (graph/store/journal.py)."""

    def get(self, thread_id: str, tool_call_id: str) -> JournalEntry | None: ...

    def start(self, thread_id: str, call: ToolCall) -> None:
        """Claim the call; raises `CallAlreadyStarted` when another run claimed it."""

    def restart(self, thread_id: str, call: ToolCall, attempts: int) -> None:
        """Claim a crashed call again after "run again" for attempt `attempts`."""

    def finish(self, thread_id: str, call: ToolCall, result: ToolMessage) -> None: ...


@dataclass(frozen=True)
class AgentDeps:
    model: Any  # the chat model, tools bound
    tools: Mapping[str, BaseTool]
    policy: Policy
    hooks: HookSet
    system_prompt: str | None
    max_model_calls: int
    journal: CallJournal | None = None
