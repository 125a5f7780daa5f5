"""The `finish` node (only when there are on_exit hooks or a stop): a stop's notice,
or the on_exit hooks, which may stop the run or send it back to the model."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.graph import END
from langgraph.types import Command

from graph.agent.deps import AgentDeps
from graph.agent.emit import emit
from graph.agent.history import last_human_id
from graph.agent.state import AgentState
from graph.protocol import events as ev
from graph.protocol.threads import NOTICE_MARK


def finish(state: AgentState, *, deps: AgentDeps) -> Command:
    if reason := state.get("stop_reason"):
        notice = AIMessage(content=reason, additional_kwargs={NOTICE_MARK: "stop"})
        emit(ev.Notice, text=reason, source="stop")
        ended = "cancelled" if state.get("stop_kind") == "cancelled" else "stopped"
        return Command(goto=END, update={"messages": [notice], "run_status": ended})
    update = deps.hooks.run("on_exit", state)
    if update.get("stop_reason"):
        update.setdefault("stop_kind", "stopped")
        return Command(goto="finish", update=update)
    if update.pop("continue_run", False):
        seen = last_human_id(update.get("messages") or [], state.get("run_message_id"))
        return Command(goto="model", update={**update, "continue_run": False, "run_message_id": seen})
    return Command(goto=END, update={**update, "run_status": "completed"})
