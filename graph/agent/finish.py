"""The `finish` node (only with on_exit hooks or a stop): a stop's notice, or the on_exit
hooks, which may stop the run or send it back to the model. A user or system message
they add without `continue_run` (or `stop_reason`) would sit unanswered: `HookError`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END
from langgraph.graph.message import add_messages
from langgraph.types import Command

from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.history import last_human_id
from gatehouse.graph.agent.run_end import ended, history_size
from gatehouse.graph.agent.state import AgentState
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import HookError
from gatehouse.graph.protocol.state_keys import stop_status
from gatehouse.graph.protocol.threads import NOTICE_MARK


def finish(state: AgentState, *, deps: AgentDeps) -> Command:
    if reason := state.get("stop_reason"):
        notice = AIMessage(content=reason, additional_kwargs={NOTICE_MARK: "stop"})
        emit(ev.Notice, text=reason, source="stop")
        end = ended(stop_status(state.get("stop_kind")), len(state.get("messages") or []) + 1)
        return Command(goto=END, update={"messages": [notice], **end})
    update = deps.hooks.run("on_exit", state)
    if update.get("stop_reason"):
        update.setdefault("stop_kind", "stopped")
        return Command(goto="finish", update=update)
    if (
        not update.get("continue_run")
        and (dangling := _unanswered(state, update.get("messages") or [])) is not None
    ):
        # Flow follows the control keys only: refused, not left unanswered.
        raise HookError(
            f"on_exit hooks added a {dangling} message but did not set continue_run: the model would never "
            'answer it. Return {"continue_run": True} with it to continue the run (or stop_reason to stop)'
        )
    if update.pop("continue_run", False):
        seen = last_human_id(update.get("messages") or [], state.get("run_message_id"))
        return Command(
            goto="model", update={**update, "continue_run": False, "run_message_id": seen}
        )
    end = ended(
        "completed",
        history_size(list(state.get("messages") or []), list(update.get("messages") or [])),
    )
    return Command(goto=END, update={**update, **end})


def _unanswered(state: AgentState, added: Sequence[Any]) -> str | None:
    """The role of a message to answer ("user", "system") the update leaves last."""
    if not added:
        return None
    messages = list(state.get("messages") or [])
    history = cast(list[Any], add_messages(cast(Any, messages), list(added)))
    last = history[-1] if history else None
    before = messages[-1] if messages else None
    if last is None or (before is not None and last.id == before.id and last.type == before.type):
        return None  # the history ended like this before the hooks ran
    if isinstance(last, HumanMessage):
        return "user"
    if isinstance(last, SystemMessage):
        return "system"
    return None
