"""Every sync API works the same way on the async side: each public `Session` method is
on `AsyncSession` under its name and signature (awaitable), and a few representative
calls give the same answers through both (after simonw/llm's test_async_parity.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from gatehouse.graph import DecisionError, ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.decisions import DecisionRecord
from gatehouse.graph.protocol.operations import (
    Cancel,
    Compact,
    Delete,
    Grant,
    ImportThread,
    Operation,
    Rename,
    Revoke,
    SetAutoApprove,
    SwitchBranch,
    Undo,
)
from gatehouse.graph.protocol.pauses import Approval
from gatehouse.graph.protocol.threads import MessageView, ThreadInfo
from gatehouse.graph.service.async_session import AsyncRun, AsyncSession
from gatehouse.graph.service.view import ThreadList, ThreadView
from gatehouse.graph.store import open_storage
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.workspace import Workspace

pytestmark = pytest.mark.timeout(120)

# Sync on both sides: they read nothing (a view's fields are awaitable on the async side).
SYNC = {"new_thread_id", "view", "thread_list"}

# Every field (None) and method (its arguments) of the two views, read through both sessions.
VIEW: dict[str, tuple[Any, ...] | None] = {
    **dict.fromkeys(["info", "exists", "pending", "messages", "transcript", "usage"]),
    **dict.fromkeys(["branches", "grants", "auto_approve", "auto_approving"]),
    "audit": (5,),
    "tool_output": ("c1",),
    "export": ("md",),
}
LIST: dict[str, tuple[Any, ...] | None] = {
    "threads": None,
    "awaiting_approval": None,
    "pending_cards": (),
    "pending_many": (["t", "none"],),
    "audit": (5,),
}


def public(cls: type) -> dict[str, Any]:
    return {n: inspect.getattr_static(cls, n) for n, _ in inspect.getmembers(cls) if n[0] != "_"}


def test_every_public_session_method_is_on_the_async_session_with_its_signature() -> None:
    sync, async_ = public(Session), public(AsyncSession)
    missing = set(sync) - set(async_)
    assert not missing, f"AsyncSession lacks {sorted(missing)}"
    for name, member in sync.items():
        if isinstance(member, property):
            assert isinstance(async_[name], property), name
            continue
        ours, theirs = getattr(AsyncSession, name), getattr(Session, name)
        params = list(inspect.signature(theirs).parameters.values())
        mine = list(inspect.signature(ours).parameters.values())
        # The same parameters; only an optional keyword may be added (`close(cancel_runs=)`).
        assert mine[: len(params)] == params, name
        assert all(
            p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in mine[len(params) :]
        )
        assert inspect.iscoroutinefunction(ours) == (name not in SYNC), name
    # The ones the hand-written mirror had lost.
    assert {"check_args", "preview", "tool_summary", "verify_audit"} <= set(async_)
    for view, reads in ((ThreadView, VIEW), (ThreadList, LIST)):
        made = {f.name for f in dataclasses.fields(view)}  # what the session gives it
        assert set(reads) == {n for n in dir(view) if n[0] != "_"} - made, view


def comparable(value: Any) -> Any:
    """A read's answer, comparable across the two sessions (not its times or ids)."""
    if isinstance(value, list | tuple):
        return [comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, ThreadInfo):
        return (value.thread_id, value.title, value.status)
    if isinstance(value, BaseMessage):
        return (value.type, value.content)
    if isinstance(value, MessageView):
        return (value.role, value.content, value.tool_status)
    if isinstance(value, DecisionRecord):
        return (value.tool, value.decision, value.source)
    if isinstance(value, Approval):
        return value.request.wire()
    return value


def read_sync(view: Any, reads: dict[str, tuple[Any, ...] | None]) -> dict[str, Any]:
    return {
        n: comparable(getattr(view, n) if args is None else getattr(view, n)(*args))
        for n, args in reads.items()
    }


async def read_async(view: Any, reads: dict[str, tuple[Any, ...] | None]) -> dict[str, Any]:
    return {
        n: comparable(await (getattr(view, n) if args is None else getattr(view, n)(*args)))
        for n, args in reads.items()
    }


def make_session(tmp_path: Path) -> Session:
    script = [
        ai("Writing.", tool_call("write_file", {"path": "a.txt", "content": "hi\n"}, "c1")),
        "Done.",
    ]
    storage = open_storage(str(tmp_path / "gatehouse.db"))
    tools = make_file_tools(Workspace(tmp_path / "ws"))
    graph = build_graph(
        model=ScriptedModel(script=script), tools=tools, checkpointer=storage.checkpointer
    )
    return Session(graph, storage, tools)


def changes(export: str) -> list[Operation]:
    """Every operation that starts no run, each once (one refused: no Compaction hook)."""
    return [
        Rename("t", "Renamed"),
        SetAutoApprove("t", True),
        Grant("t", "write_file", "*.md"),
        Revoke("t", "write_file:*.md"),
        SetAutoApprove(None, True),
        SetAutoApprove(None, False),
        Cancel("t"),
        Compact("t"),
        SwitchBranch("t", "no-such-message"),
        ImportThread(export, thread_id="copy"),
        Delete("copy"),
        Undo("t", force=True),
    ]


def answer(made: Any) -> Any:
    """What a change answered, comparable across the two sessions (not its time)."""
    if isinstance(made, Exception):
        return f"{type(made).__name__}: {made}"
    assert isinstance(made, ev.Done)
    return made.model_dump(exclude={"ts": True, "grant": {"granted_at"}}, mode="json")


def through_sync(session: Session) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["send"] = [e.type for e in session.send("t", "write a file").collect()]
    out["paused"] = [read_sync(session.view("t"), VIEW), read_sync(session.thread_list(), LIST)]
    pause = session.view("t").pending
    out["pending"] = pause.request.wire() if pause else None
    out["check_args"] = session.check_args("write_file", {"path": 3})
    out["preview"] = session.preview("write_file", {"path": "a.txt", "content": "x"})
    out["tool_summary"] = session.tool_summary("write_file")
    with pytest.raises(DecisionError) as refused:
        session.resume("t", {"decisions": []})
    out["refused"] = str(refused.value)
    out["still_pending"] = session.view("t").pending is not None
    out["resume"] = [e.type for e in session.resume("t", {"decisions": [{"type": "approve"}]})]
    out["transcript"] = [(m.role, m.content, m.tool_status) for m in session.view("t").transcript]
    out["threads"] = [(i.thread_id, i.status) for i in session.thread_list().threads]
    out["verify_audit"] = session.verify_audit()
    out["resumed"] = [read_sync(session.view("t"), VIEW), read_sync(session.thread_list(), LIST)]
    out["changes"] = []
    for op in changes(session.view("t").export("json")):
        try:
            out["changes"].append(answer(session.submit(op).result()))
        except Exception as exc:  # noqa: BLE001 - compared with the async side's
            out["changes"].append(answer(exc))
    out["after"] = [(i.thread_id, i.title) for i in session.thread_list().threads]
    out["after_transcript"] = [(m.role, m.content) for m in session.view("t").transcript]
    session.close()
    return out


async def through_async(session: AsyncSession) -> dict[str, Any]:
    out: dict[str, Any] = {}
    run = await session.send("t", "write a file")
    assert isinstance(run, AsyncRun)
    out["send"] = [e.type for e in await run.collect()]
    views = [session.view("t"), session.thread_list()]
    out["paused"] = [await read_async(views[0], VIEW), await read_async(views[1], LIST)]
    pause = await session.view("t").pending
    out["pending"] = pause.request.wire() if pause else None
    out["check_args"] = await session.check_args("write_file", {"path": 3})
    out["preview"] = await session.preview("write_file", {"path": "a.txt", "content": "x"})
    out["tool_summary"] = await session.tool_summary("write_file")
    with pytest.raises(DecisionError) as refused:
        await session.resume("t", {"decisions": []})
    out["refused"] = str(refused.value)
    out["still_pending"] = await session.view("t").pending is not None
    run = await session.resume("t", {"decisions": [{"type": "approve"}]})
    out["resume"] = [e.type for e in await run.collect()]
    out["transcript"] = [
        (m.role, m.content, m.tool_status) for m in await session.view("t").transcript
    ]
    out["threads"] = [(i.thread_id, i.status) for i in await session.thread_list().threads]
    out["verify_audit"] = await session.verify_audit()
    views = [session.view("t"), session.thread_list()]
    out["resumed"] = [await read_async(views[0], VIEW), await read_async(views[1], LIST)]
    out["changes"] = []
    for op in changes(await session.view("t").export("json")):
        try:
            out["changes"].append(answer(await (await session.submit(op)).result()))
        except Exception as exc:  # noqa: BLE001 - compared with the sync side's
            out["changes"].append(answer(exc))
    out["after"] = [(i.thread_id, i.title) for i in await session.thread_list().threads]
    out["after_transcript"] = [(m.role, m.content) for m in await session.view("t").transcript]
    await session.close()
    return out


def test_representative_calls_answer_the_same_through_both(tmp_path: Path) -> None:
    sync = through_sync(make_session(tmp_path / "sync"))
    async_ = asyncio.run(through_async(AsyncSession(make_session(tmp_path / "async"))))
    assert sync == async_
    # What a person would notice, so the comparison is not of two empty answers.
    assert sync["send"][-2:] == ["approval_required", "run_finished"]
    assert sync["pending"] and sync["check_args"] and sync["refused"] and sync["still_pending"]
    assert sync["resume"][-1] == "run_finished" and sync["threads"] == [("t", "completed")]
    assert (tmp_path / "async" / "ws" / "a.txt").read_text() == "hi\n"
    # Every change answered, and changed what a person sees, the same way on both sides.
    assert [c["operation"] if isinstance(c, dict) else c for c in sync["changes"]] == [
        "rename",
        "set_auto_approve",
        "grant",
        "revoke",
        "set_auto_approve",
        "set_auto_approve",
        "cancel",
        "ValueError: this agent has no Compaction hook (see docs/hooks.md)",
        "ValueError: message no-such-message is not a version of any message of thread t",
        "import_thread",
        "delete",
        "undo",
    ]
    assert sync["paused"][0]["pending"] and sync["paused"][1]["pending_cards"]
    assert sync["resumed"][0]["tool_output"] and sync["resumed"][0]["export"], sync["resumed"]
    assert sync["after"] == [("t", "Renamed")] and sync["changes"][-1]["removed"] == 4
