"""Issue 35 item 2 and issue 29 item 4: a paused thread exported and imported (into
another database, or back into its own after a delete) waits again for the same
request, and every call runs at most once: the journal and the decision log travel
with the export, and an import that could ask again for a call that was already
decided or ran is refused, writing nothing. SQLite and Postgres."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.types import Command, Send

from gatehouse.graph import ImportRefused, NothingPending, Session, StaleDecision, ai, tool_call
from gatehouse.graph.protocol.operations import Delete, ImportThread
from tests.support.core_fixtures import Ledger, make_session

SCRIPT = [
    ai(
        "Looking it up, then deploying.",
        tool_call("lookup", {"key": "version"}, "k1"),
        tool_call("deploy", {"service": "web"}, "d1"),
    ),
    "Deployed.",
]
APPROVE = {"decisions": [{"type": "approve"}]}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the import goes: a SQLite file, or a Postgres database of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "target.db")
    else:
        yield request.getfixturevalue("postgres_url")


def opened(
    tmp: Path, db: str | None = None, script: list[Any] | None = None
) -> tuple[Session, Ledger]:
    tmp.mkdir(parents=True, exist_ok=True)
    session, ledger, _ = make_session(tmp, script if script is not None else SCRIPT, db=db)
    return session, ledger


def paused_thread(tmp: Path) -> tuple[Session, Ledger, str]:
    session, ledger = opened(tmp)
    run = session.send(None, "deploy web")
    assert run.collect()[-1].status == "awaiting_approval"
    return session, ledger, run.thread_id


def results(session: Session, thread_id: str) -> dict[str, str]:
    return {
        m.tool_call_id: str(m.content)
        for m in session.view(thread_id).messages
        if isinstance(m, ToolMessage)
    }


def test_a_paused_thread_waits_again_in_another_database_and_runs_once(
    tmp_path: Path, target_db: str
) -> None:
    source, source_ledger, tid = paused_thread(tmp_path / "a")
    asked = source.view(tid).pending
    exported = source.view(tid).export("json")
    data = json.loads(exported)
    assert (
        data["pending"]["kind"] == "approval"
        and data["pending"]["interrupt_id"] == asked.interrupt_id
    )
    assert [a["tool_call_id"] for a in data["pending"]["request"]["action_requests"]] == ["d1"]
    assert source_ledger.count("lookup") == 1  # the free call ran before the pause

    target, ledger = opened(tmp_path / "b", target_db)
    try:
        assert target.submit(ImportThread(exported)).result().thread_id == tid
        restored = target.view(tid).pending
        assert restored is not None and restored.kind == "approval"
        assert restored.request.wire() == asked.request.wire()  # the same card
        assert target.view(tid).info.status == "awaiting_approval"
        assert [t.thread_id for t in target.thread_list().awaiting_approval] == [tid]
        assert ledger.entries() == []  # importing ran nothing: not the free call, not the gated one
        assert results(target, tid) == results(source, tid) == {"k1": "value of version"}

        # A paused thread imports only under its own id, once per database: no copy that
        # could be approved a second time.
        with pytest.raises(ImportRefused, match="only under its own id"):
            target.submit(ImportThread(exported))
        with pytest.raises(ImportRefused, match="only under its own id"):
            target.submit(ImportThread(exported, thread_id="copy"))
        assert not target.view("copy").exists and [
            t.thread_id for t in target.thread_list().threads
        ] == [tid]

        # The old interrupt id is not the pending one here; the restored one is answered once.
        with pytest.raises(StaleDecision):
            target.resume(tid, APPROVE, interrupt_id=asked.interrupt_id)
        events = target.resume(tid, APPROVE, interrupt_id=restored.interrupt_id).collect()
        assert events[-1].status == "completed" and events[-1].text == "Deployed."
        assert ledger.count("deploy") == 1 and ledger.count("lookup") == 0
        with pytest.raises(NothingPending):
            target.resume(tid, APPROVE)
        assert [r.decision for r in target.view(tid).audit()] == ["approve"]
        assert [e.tool_call_id for e in target.storage.journal.entries(tid)] == ["d1"]

        # After it ran, the same export cannot ask for it again here, under any id.
        for thread_id in (None, "copy"):
            with pytest.raises(ImportRefused, match=r"deploy \(call d1\) already ran"):
                target.submit(ImportThread(exported, thread_id=thread_id))
        assert not target.view("copy").exists and ledger.count("deploy") == 1
    finally:
        source.close()
        target.close()


def test_delete_then_import_the_threads_own_export_never_runs_an_approved_call_again(
    tmp_path: Path, target_db: str
) -> None:
    """Issue 29 item 4: the same thread id returns with its journal and decisions."""
    session, ledger = opened(tmp_path, target_db)
    try:
        run = session.send(None, "deploy web")
        run.collect()
        tid = run.thread_id
        paused_export = session.view(tid).export("json")  # taken before the approval
        session.resume(tid, APPROVE).collect()
        assert ledger.count("deploy") == 1
        done_export = session.view(tid).export("json")
        assert [e["tool_call_id"] for e in json.loads(done_export)["journal"]] == ["d1"]
        messages = session.view(tid).messages

        session.submit(Delete(tid))
        assert session.submit(ImportThread(done_export)).result().thread_id == tid
        assert session.view(tid).messages == messages
        [entry] = session.storage.journal.entries(tid)
        assert entry.tool_call_id == "d1" and entry.finished
        # The approval is still in the log (it outlives the delete); a replayed task for
        # the approved call finds its journal row and does not run it again.
        replay = Send(
            "run_tool",
            {
                "call": tool_call("deploy", {"service": "web"}, "d1"),
                "mode": "run",
                "moves_on": False,
            },
        )
        session.agent.invoke(Command(goto=replay), {"configurable": {"thread_id": tid}})
        assert ledger.count("deploy") == 1

        # The export from before the approval would ask for the call again: refused.
        session.submit(Delete(tid))
        with pytest.raises(ImportRefused, match=r"deploy \(call d1\) was already decided"):
            session.submit(ImportThread(paused_export))
        assert not session.view(tid).exists and ledger.count("deploy") == 1
    finally:
        session.close()


@pytest.mark.parametrize(
    "tamper, error",
    [
        (
            lambda d: d["pending"].update(kind="outcome_unknown"),
            "outcome of a call a crash cut off",
        ),
        (
            lambda d: d["pending"]["request"]["action_requests"][0]["args"].update(service="db"),
            "does not match the thread's open tool calls",
        ),
        (
            lambda d: d["journal"].append(
                {
                    "tool_call_id": "d1",
                    "name": "deploy",
                    "args": {"service": "web"},
                    "status": "finished",
                    "result": None,
                    "started_at": 1.0,
                    "finished_at": 2.0,
                    "pid": 1,
                    "attempts": 1,
                }
            ),
            "already decided or started",
        ),
        (
            lambda d: d["decisions"].append(
                {
                    "thread_id": "x",
                    "question": "review",
                    "tool_call_id": "d1",
                    "tool": "deploy",
                    "decision": "approve",
                    "args": {"service": "web"},
                }
            ),
            "already decided or started",
        ),
        (lambda d: d.update(journal=[{"tool_call_id": "k9"}]), "journal entry 0 is malformed"),
        (lambda d: d.update(pending="yes"), '"pending" must be'),
        # A request that is not the shape of one: refused, saying where.
        (
            lambda d: d["pending"]["request"]["action_requests"][0].update(args="rm -rf /"),
            r"malformed pending request: request\.action_requests\[0\]\.args: expected an object",
        ),
        (
            lambda d: d["pending"]["request"]["review_configs"][0].update(
                allowed_decisions=["approve", "sudo"]
            ),
            r"review_configs\[0\]\.allowed_decisions: expected a list of approve, edit",
        ),
    ],
)
def test_a_tampered_paused_export_is_refused_and_writes_nothing(
    tmp_path: Path, tamper: Any, error: str
) -> None:
    source, _, tid = paused_thread(tmp_path / "a")
    target, ledger = opened(tmp_path / "b")
    try:
        data = json.loads(source.view(tid).export("json"))
        tamper(data)
        with pytest.raises(ImportRefused, match=error):
            target.submit(ImportThread(data))
        assert (
            not target.view(tid).exists
            and target.thread_list().threads == []
            and ledger.entries() == []
        )
        assert target.thread_list().audit() == []
    finally:
        source.close()
        target.close()


def test_an_import_where_the_policy_would_not_ask_is_refused(tmp_path: Path) -> None:
    """The target database's agent runs deploy freely: restoring the pause there would
    run it without the person who was asked, at import. Refused, nothing written."""
    source, _, tid = paused_thread(tmp_path / "a")
    (tmp_path / "b").mkdir()
    target, ledger, _ = make_session(tmp_path / "b", SCRIPT, policy={"deploy": "allow"})
    try:
        with pytest.raises(ImportRefused, match="would not ask the same calls"):
            target.submit(ImportThread(source.view(tid).export("json")))
        assert (
            not target.view(tid).exists
            and ledger.entries() == []
            and target.thread_list().threads == []
        )
    finally:
        source.close()
        target.close()


def test_the_terminal_imports_a_paused_thread_once(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gatehouse.graph import ScriptedModel, Settings, open_session
    from gatehouse.ui.term.cli import app

    (tmp_path / "ws").mkdir()
    write = ai("", tool_call("write_file", {"path": "notes.md", "content": "hi\n"}, "w1"))
    source = open_session(
        Settings(db=str(tmp_path / "a.db"), workspace=str(tmp_path / "ws")),
        model=ScriptedModel(script=[write]),
    )
    run = source.send(None, "write notes")
    assert run.collect()[-1].status == "awaiting_approval"
    path = tmp_path / "paused.json"
    path.write_text(source.view(run.thread_id).export("json"))
    source.close()

    runner = CliRunner()
    env = {"GATEHOUSE_DB": str(tmp_path / "b.db"), "GATEHOUSE_WORKSPACE": str(tmp_path / "ws")}
    result = runner.invoke(app, ["import", str(path), "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["thread_id"] == run.thread_id
    inbox = runner.invoke(app, ["pending", "--json"], env=env)
    assert inbox.exit_code == 0 and run.thread_id in inbox.stdout and "notes.md" in inbox.stdout
    again = runner.invoke(app, ["import", str(path)], env=env)
    assert again.exit_code == 2 and "only under its own id" in again.output
    assert not (tmp_path / "ws" / "notes.md").exists()


def test_async_session_serialises_a_paused_run_and_wakes_it_elsewhere(
    tmp_path: Path, target_db: str
) -> None:
    """The pydantic-ai user's story: pause for approval, store it, wake it up anywhere."""
    import asyncio

    from gatehouse.graph import AsyncSession

    source, _ = opened(tmp_path / "a")
    target, ledger = opened(tmp_path / "b", target_db)

    async def main() -> str | None:
        here, there = AsyncSession(source), AsyncSession(target)
        run = await here.start(None, "deploy web")
        await run.collect()
        stored = await here.view(run.thread_id).export("json")  # e.g. into a queue or a blob store
        await here.submit(Delete(run.thread_id))  # handed over: answered in one place only
        tid = (await (await there.submit(ImportThread(stored))).result()).thread_id
        pending = await there.view(tid).pending
        assert pending is not None and [a.name for a in pending.actions] == ["deploy"]
        resumed = await there.resume(tid, APPROVE, interrupt_id=pending.interrupt_id)
        await resumed.collect()
        await here.close()
        await there.close()
        return resumed.status

    assert asyncio.run(main()) == "completed"
    assert ledger.count("deploy") == 1
