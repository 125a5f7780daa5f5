"""Require a tool before exit: keep the run going until the model has called a named tool.

    build_graph(..., hooks={"on_exit": [RequireTool("run_tests", max_reminders=2)]})

Until the tool ran successfully in this run, an exit gets an instruction and
`continue_run`; after `max_reminders` the run stops (the count lives in `hook_run`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from gatehouse.graph.agent.builtin_hooks.compaction import is_summary
from gatehouse.graph.agent.emit import emit
from gatehouse.graph.protocol import events as ev

HOOK_MARK = "gatehouse_hook"


class RequireTool:
    copy_state = False  # it returns its changes: a read-only view (hook_state.py)

    def __init__(
        self,
        tool: str,
        *,
        max_reminders: int = 2,
        instruction: str | None = None,
        name: str | None = None,
    ) -> None:
        self.tool = tool
        self.max_reminders = max_reminders
        self.instruction = instruction or (
            f"Before you finish, call the `{tool}` tool (it has not run successfully yet), "
            "then give your final answer."
        )
        self.name = name or f"require_tool:{tool}"

    def __repr__(self) -> str:
        return f"RequireTool({self.tool})"

    def run(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        # Not when an earlier on_exit hook already decided this exit.
        if state.get("continue_run") or state.get("stop_reason"):
            return None
        if self.called(state.get("messages") or []):
            return None
        reminders = ((state.get("hook_run") or {}).get(self.name) or {}).get("reminders", 0)
        if reminders >= self.max_reminders:
            return {
                "stop_reason": (
                    f"Stopped: the agent tried to finish without calling {self.tool} "
                    f"({reminders} reminder{'s' if reminders != 1 else ''} given)."
                ),
                "stop_kind": "stopped",
            }
        text = f"Reminding the agent to call {self.tool} before finishing."
        emit(ev.Notice, text=text, source=self.name)
        return {
            "continue_run": True,
            "messages": [HumanMessage(self.instruction, additional_kwargs={HOOK_MARK: self.name})],
            "hook_run": {self.name: {"reminders": reminders + 1}},
        }

    def called(self, messages: list[Any]) -> bool:
        for m in reversed(messages):
            if isinstance(m, ToolMessage) and m.name == self.tool and m.status != "error":
                return True
            if from_person(m):
                return False
        return False


def from_person(m: Any) -> bool:
    """A user message the person wrote (not a hook's, not a compaction summary)."""
    return (
        isinstance(m, HumanMessage) and not m.additional_kwargs.get(HOOK_MARK) and not is_summary(m)
    )
