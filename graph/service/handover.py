"""A thread carried to another database: an export's "pending", "journal" and
"decisions", and an import that runs no call twice. History moves, authority does
not (no grant, switch or approval comes back in force); an import writes nothing when
a pending call could run twice. Not prevented: the source keeps its own pause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

from langchain_core.messages import ToolMessage, message_to_dict, messages_from_dict
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.history import unanswered
from gatehouse.graph.protocol.decisions import (
    ALL_TOOLS,
    GRANT_QUESTION,
    LIFE_QUESTION,
    DecisionRecord,
)
from gatehouse.graph.protocol.errors import ImportRefused
from gatehouse.graph.protocol.pauses import Approval, MalformedPause, Pause, pause_from
from gatehouse.graph.service.transcript import Exported
from gatehouse.graph.store.decisions import grants_in_force
from gatehouse.graph.store.journal import JournalEntry
from gatehouse.graph.store.storage import Storage

_DECISION_FIELDS = {f.name for f in dataclasses.fields(DecisionRecord)}
_JOURNAL_FIELDS = {f.name for f in dataclasses.fields(JournalEntry)}


def carried(storage: Storage, thread_id: str, pause: Pause | None) -> dict[str, Any]:
    """What an export carries beside the messages (see the module doc)."""
    journal = storage.journal.entries(thread_id) if storage.journal is not None else []
    decisions = storage.decisions.for_thread(thread_id) if storage.decisions is not None else []
    return {
        "pending": None
        if pause is None
        else {k: v for k, v in pause.to_dict().items() if k != "thread_id"},
        "journal": [_journal_dict(e) for e in journal],
        "decisions": [
            {k: v for k, v in r.to_dict().items() if k in _DECISION_FIELDS} for r in decisions
        ],
    }


def _journal_dict(e: JournalEntry) -> dict[str, Any]:
    data = dataclasses.asdict(e)
    data.pop("thread_id")
    data["result"] = None if e.result is None else message_to_dict(e.result)
    return data


def journal_of(exported: Exported, thread_id: str) -> list[JournalEntry]:
    entries = []
    for i, row in enumerate(exported.journal):
        try:
            result = messages_from_dict([row["result"]])[0] if row.get("result") else None
            if result is not None and not isinstance(result, ToolMessage):
                raise ValueError("its result is not a tool message")
            fields = {k: v for k, v in row.items() if k in _JOURNAL_FIELDS}
            entries.append(JournalEntry(**{**fields, "thread_id": thread_id, "result": result}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ImportRefused(
                f"journal entry {i} is malformed: {type(exc).__name__}: {exc}"
            ) from None
        if entries[-1].status not in ("started", "finished"):
            raise ImportRefused(f"journal entry {i} has an unknown status {entries[-1].status!r}")
    return entries


class Imported(str):
    """An imported thread's id, and the grants and switches in force that stayed behind."""

    grants: int = 0
    switches: int = 0

    @property
    def dropped(self) -> str | None:
        """What the import dropped, as people read it (None: nothing)."""
        counts = ((self.grants, "grant", "s"), (self.switches, "auto-approve switch", "es"))
        parts = " and ".join(
            f"{n} {word}{plural if n > 1 else ''}" for n, word, plural in counts if n
        )
        return f"dropped {parts}: authority does not move between databases" if parts else None


def decisions_of(exported: Exported, thread_id: str) -> tuple[list[DecisionRecord], Imported]:
    """The export's decisions as history (no grant, no switch), and what was dropped."""
    records = []
    for i, row in enumerate(exported.decisions):
        try:
            fields = {k: v for k, v in row.items() if k in _DECISION_FIELDS}
            records.append(DecisionRecord(**{**fields, "thread_id": thread_id}))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ImportRefused(f"decision {i} is malformed: {type(exc).__name__}: {exc}") from None
    held = grants_in_force(thread_id, records)
    switches = sum(g.tool == ALL_TOOLS for g in held)
    history = [
        dataclasses.replace(r, always_allow=None)
        for r in records
        if r.question not in (GRANT_QUESTION, LIFE_QUESTION)
    ]
    imported = Imported(thread_id)
    imported.grants, imported.switches = len(held) - switches, switches
    return history, imported


def check(
    storage: Storage,
    thread_id: str,
    exported: Exported,
    journal: Sequence[JournalEntry],
    decisions: Sequence[DecisionRecord],
    taken: bool,
    tools: Collection[str],
) -> Approval | None:
    """The pause an import restores (None: none), or `ImportRefused` saying why not."""
    if (pending := exported.pending) is None:
        return None
    try:
        pause = pause_from(
            thread_id, str(pending.get("interrupt_id") or ""), pending.get("request")
        )
    except MalformedPause as exc:
        raise ImportRefused(f"malformed pending request: {exc}") from None
    if pending.get("kind") != "approval" or not isinstance(pause, Approval):
        raise ImportRefused(
            "the thread waits for the outcome of a call a crash cut off (or an unknown request); decide it, "
            "then export again"
        )
    asked = _calls(pause)
    if missing := sorted({name for _, name, _ in asked} - set(tools)):
        raise ImportRefused(
            f"this agent has no tool named {', '.join(missing)}: the pending request cannot be asked here"
        )
    open_calls = unanswered({"messages": exported.messages})
    if sorted(asked, key=repr) != sorted(
        ((c["id"], c["name"], c["args"]) for c in open_calls), key=repr
    ):
        raise ImportRefused("the pending request does not match the thread's open tool calls")
    ids = {call_id for call_id, _, _ in asked}
    if any(e.tool_call_id in ids for e in journal) or any(r.tool_call_id in ids for r in decisions):
        raise ImportRefused(
            "the export says a pending call was already decided or started; it is not importable"
        )
    for owner in dict.fromkeys(t for t in (thread_id, exported.thread_id) if t):
        for call_id, name, _ in asked:
            if call_id is None:  # no id: nothing in the database can name it
                continue
            if storage.journal is not None and storage.journal.get(owner, call_id) is not None:
                raise ImportRefused(
                    f"{name} (call {call_id}) already ran on thread {owner} in this database: the export is older "
                    "than that run; importing it would ask for it again. Export the thread again"
                )
            if storage.decisions is not None and storage.decisions.for_call(owner, call_id):
                raise ImportRefused(
                    f"{name} (call {call_id}) was already decided on thread {owner} in this database (see `audit`): "
                    "the export is older than that decision; importing it would ask for it again"
                )
    if thread_id != exported.thread_id:
        raise ImportRefused(
            f"a thread that waits for a decision imports only under its own id ({exported.thread_id}), once per "
            "database: a copy would hold a second request for the same call, which could then be approved twice"
            + (
                " (that id is taken here: answer the request there, or delete that thread first)"
                if taken
                else ""
            )
        )
    return pause


def restore(
    agent: CompiledStateGraph[Any, Any, Any, Any],
    storage: Storage,
    thread_id: str,
    exported: Exported,
    journal: Sequence[JournalEntry],
    decisions: Sequence[DecisionRecord],
    pause: Approval | None,
) -> None:
    """Write the thread; undone when its pause does not come back as it was."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    if storage.outputs is not None:
        names = {m.tool_call_id: m.name for m in exported.messages if isinstance(m, ToolMessage)}
        for call_id, text in exported.tool_outputs.items():
            storage.outputs.put(thread_id, call_id, names.get(call_id) or "tool", text)
    if storage.journal is not None and journal:
        storage.journal.restore(journal)
    if pause is None:
        agent.update_state(config, {"messages": exported.messages}, as_node="finish")
    else:
        # Only `review` runs, pure up to its interrupt; `interrupt_after` keeps anything
        # after it (a call this policy would run freely) from running at import.
        agent.update_state(
            config, Command(update={"messages": exported.messages}, goto="review"), as_node="review"
        )
        agent.invoke(
            None, config, context=RunContext(), durability="sync", interrupt_after=["review"]
        )
        asked = _asked(agent, thread_id)
        if asked is None or _calls(asked) != _calls(pause):
            storage.delete_thread(thread_id)
            shown = ", ".join(n for _, n, _ in _calls(asked)) or "nothing"
            raise ImportRefused(
                f"this database's policy would not ask the same calls (it asks about {shown}, the export about "
                f"{', '.join(n for _, n, _ in _calls(pause))}): the pause cannot be restored here; nothing was written"
            )
    if storage.decisions is not None:
        storage.decisions.record_history(thread_id, decisions)


def _asked(agent: CompiledStateGraph, thread_id: str) -> Approval | None:
    state = agent.get_state({"configurable": {"thread_id": thread_id}})
    pauses = [pause_from(thread_id, i.id, i.value) for i in state.interrupts]
    return next((p for p in pauses if isinstance(p, Approval)), None)


def _calls(pause: Approval | None) -> list[tuple[str | None, str, Any]]:
    if pause is None:
        return []
    return [(a.tool_call_id, a.name, a.args) for a in pause.request.action_requests]
