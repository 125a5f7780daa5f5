"""Authority has one door (issue 54, items 1-6): every decision that lets a call run or
answers for it enters through graph/agent/authority.py, which checks who decides (an
identity compared after NFKC + casefold, confusables refused), whether they may (a
tool's `approvers`, on every kind of question) and what it binds; the gate acts only
on rows the door wrote in this database, in the thread's current life; an import
carries history, never authority. Each attack through the Session and the raw
compiled graph (`Command(resume=...)`); the CLI's import too. The server's side:
tests/test_authority_server.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.constants import END
from langgraph.types import Command, Send
from pydantic import ValidationError

from gatehouse.graph import AsyncSession, DecisionError, Settings, open_session
from gatehouse.graph.protocol.identity import identity_problem, same_identity
from gatehouse.graph.protocol.operations import (
    Delete,
    ImportThread,
    Revoke,
    RunOptions,
    SetAutoApprove,
)
from gatehouse.graph.service.testing import ai, tool_call
from gatehouse.graph.store.binding import call_key
from tests.support.core_fixtures import make_session
from tests.test_cli import env, gh  # noqa: F401  (env is a fixture)

ANA, BOB = "ana@example.com", "bob@example.com"
KELVIN_KIM = "\u212aim@example.com"  # "Kim" spelled with the Kelvin sign
DEPLOY = tool_call("deploy", {"service": "api"}, "c1")
APPROVE = {"decisions": [{"type": "approve"}]}
ANA_DECIDES = {"deploy": {"mode": "ask", "approvers": [ANA]}}


def cfg(thread: str, actor: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread}
    if actor:
        conf["gatehouse_actor"] = actor
    return {"configurable": conf}


def paused_on_deploy(tmp: Path, policy: dict[str, Any] | None = None, turns: int = 1) -> Any:
    script: list[Any] = []
    for _ in range(turns):
        script += [ai("", DEPLOY), "ok"]
    session, ledger, _ = make_session(tmp, script, policy=policy or ANA_DECIDES)
    session.send("t1", "deploy", actor=BOB).collect()
    assert session.view("t1").pending is not None
    return session, ledger


def test_identities_compare_folded_and_refuse_lookalikes() -> None:
    assert same_identity("Ana@Example.COM", ANA) and same_identity(
        "kim@example.com", "KIM@example.com"
    )
    assert not same_identity(KELVIN_KIM, "kim@example.com")
    for lookalike in (
        KELVIN_KIM,
        "\u0430na@example.com",  # a Cyrillic "а"
        "ana\u200b@example.com",  # a zero-width space
        "ana\u202e@example.com",  # a bidi override
        "ana\x1b@example.com",
    ):
        assert identity_problem(lookalike) is not None, lookalike
        assert not same_identity(lookalike, ANA)
    assert identity_problem("Ana Lopez") is None and identity_problem("山田太郎") is None


def test_a_lookalike_identity_decides_nothing_through_the_session_or_the_graph(
    tmp_path: Path,
) -> None:
    session, ledger = paused_on_deploy(
        tmp_path, {"deploy": {"mode": "ask", "approvers": ["kim@example.com"]}}
    )
    asked = session.view("t1").pending
    with pytest.raises(DecisionError, match="NFKC"):
        session.resume("t1", APPROVE, actor=KELVIN_KIM)
    with pytest.raises(ValidationError, match="NFKC"):
        session.agent.invoke(Command(resume=APPROVE), cfg("t1", KELVIN_KIM))
    assert session.view("t1").pending == asked and ledger.entries() == []
    assert session.storage.decisions.for_thread("t1") == []
    # The real Kim, however they type their name, decides.
    session.resume("t1", APPROVE, actor="KIM@example.com").collect()
    assert ledger.count("deploy") == 1


def test_only_approvers_answer_the_outcome_unknown_question(tmp_path: Path) -> None:
    """After a crash in an approved call, "run again" is a decision like any other:
    bob (not among deploy's approvers) cannot answer it, through either door."""
    session, ledger = paused_on_deploy(tmp_path)
    session.storage.journal.start("t1", DEPLOY)  # what a crash mid-call leaves
    session.resume("t1", APPROVE, actor=ANA).collect()
    pending = session.view("t1").pending
    assert pending is not None and pending.kind == "outcome_unknown"
    for answer in ({"type": "run_again"}, {"type": "mark_failed", "message": "no"}):
        with pytest.raises(DecisionError, match=f"only {ANA} may decide deploy"):
            session.resume("t1", answer, actor=BOB)
        with pytest.raises(ValidationError, match=f"only {ANA} may decide deploy"):
            session.agent.invoke(Command(resume=answer), cfg("t1", BOB))
        with pytest.raises(ValidationError, match="NFKC"):
            session.agent.invoke(Command(resume=answer), cfg("t1", "\uff41na@example.com"))
    assert session.view("t1").pending == pending and ledger.entries() == []
    assert not [r for r in session.view("t1").audit() if r.question.startswith("outcome")]
    session.resume("t1", {"type": "run_again"}, actor=ANA).collect()
    assert ledger.count("deploy") == 1
    [outcome] = [r for r in session.view("t1").audit() if r.question.startswith("outcome")]
    assert (outcome.decision, outcome.actor) == ("run_again", ANA)


def test_resolve_goes_through_the_door(tmp_path: Path) -> None:
    session, ledger = paused_on_deploy(tmp_path)
    for who in (BOB, KELVIN_KIM, None):
        with pytest.raises(PermissionError, match="nothing was recorded"):
            session.agent.update_state(cfg("t1", who), None, as_node=END)
    assert (
        session.view("t1").pending is not None and session.storage.decisions.for_thread("t1") == []
    )
    session.agent.update_state(cfg("t1", "ANA@example.com"), None, as_node=END)
    [record] = session.storage.decisions.for_thread("t1")
    assert (record.decision, record.actor, record.request_id) == (
        "reject",
        "ANA@example.com",
        record.request_id,
    )
    assert record.request_id and ledger.entries() == []


def test_switches_and_revokes_go_through_the_door(tmp_path: Path) -> None:
    session, _ = paused_on_deploy(tmp_path)
    with pytest.raises(PermissionError, match="NFKC"):
        session.submit(SetAutoApprove("t1", True), RunOptions(actor=KELVIN_KIM))
    assert not session.view("t1").auto_approve
    session.resume(
        "t1", {"decisions": [{"type": "approve", "always_allow": True}]}, actor=ANA
    ).collect()
    [grant] = session.view("t1").grants
    with pytest.raises(PermissionError, match=f"only {ANA} may decide deploy"):
        session.submit(Revoke("t1", "deploy"), RunOptions(actor=BOB))
    assert session.view("t1").grants == [grant]
    session.submit(Revoke("t1", "deploy"), RunOptions(actor=ANA))
    assert session.view("t1").grants == []


def insert_row(session: Any, **fields: Any) -> None:
    """A decision row written with SQL, as someone with the database file could."""
    row = {
        "thread_id": "t1",
        "question": "review",
        "tool_call_id": "c1",
        "tool": "deploy",
        "decision": "approve",
        "args_json": json.dumps(DEPLOY["args"]),
        "actor": ANA,
        "source": "web",
        "decided_at": 1e10,
        **fields,
    }
    row["call_key"] = call_key(row["tool"], json.loads(row["args_json"]))
    names = ", ".join(row)
    session.storage.decisions._db.run(
        f"INSERT INTO gatehouse_decisions({names}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )


def test_a_decision_row_inserted_with_sql_lets_nothing_run(tmp_path: Path) -> None:
    session, ledger = paused_on_deploy(tmp_path, turns=2)
    for thread in ("t1", "t2"):
        insert_row(session, thread_id=thread)
        insert_row(session, thread_id=thread, tool_call_id="g1", always_allow="*", question="grant")
        insert_row(
            session,
            thread_id=thread,
            tool_call_id="s1",
            tool="*",
            always_allow="*",
            question="grant",
        )
    # A forged task (what a client's `Send` or a state edit reaches run_tool with) finds
    # the row, but the chain does not vouch for it: refused, nothing runs.
    forged = Send("run_tool", {"call": DEPLOY, "mode": "run", "moves_on": True})
    session.agent.invoke(Command(goto=forged), cfg("t1"))
    # A call the model makes after the row was written is asked like any other.
    session.send("t2", "deploy", actor=BOB).collect()
    assert ledger.entries() == [] and session.view("t1").pending and session.view("t2").pending
    assert session.view("t1").grants == [] and not session.view("t2").auto_approve
    assert not session.storage.decisions.verify().intact  # and --verify says so
    # The person's own answer still decides it.
    session.resume("t1", APPROVE, actor=ANA).collect()
    assert ledger.count("deploy") == 1


def test_grants_end_with_their_thread_and_their_givers_authority(tmp_path: Path) -> None:
    script: list[Any] = [ai("", DEPLOY), "ok", ai("", DEPLOY), "ok", ai("", DEPLOY), "ok"]
    session, ledger, _ = make_session(tmp_path, script)
    session.send("t1", "deploy", actor=ANA).collect()
    always = {"decisions": [{"type": "approve", "always_allow": True}]}
    session.resume("t1", always, actor=ANA).collect()
    assert ledger.count("deploy") == 1 and [g.label for g in session.view("t1").grants] == [
        "deploy"
    ]
    session.submit(Delete("t1"))
    # A new thread under the same id inherits nothing: neither the grant nor the approval
    # of a call with the same id, tool and arguments.
    session.send("t1", "deploy", actor=BOB).collect()
    assert session.view("t1").pending is not None and ledger.count("deploy") == 1
    assert session.view("t1").grants == []
    session.agent.invoke(
        Command(goto=Send("run_tool", {"call": DEPLOY, "mode": "run", "moves_on": True})), cfg("t1")
    )
    assert ledger.count("deploy") == 1

    # A grant decides only while its giver may decide the tool.
    grants_db = str(tmp_path / "grants.db")
    (tmp_path / "a").mkdir()
    free, ledger2, _ = make_session(tmp_path / "a", [ai("", DEPLOY), "ok"], db=grants_db)
    free.send("t2", "deploy", actor=BOB).collect()
    free.resume("t2", always, actor=BOB).collect()
    free.close()
    later, _, _ = make_session(
        tmp_path / "a",
        [ai("", DEPLOY), "ok", ai("", tool_call("deploy", {"service": "db"}, "c9")), "ok"],
        db=grants_db,
        policy=ANA_DECIDES,
    )
    later.send("t2", "deploy", actor=BOB).collect()
    assert later.view("t2").pending is not None and ledger2.count("deploy") == 1


def crafted_export(tmp_path: Path, thread: str) -> dict[str, Any]:
    """A real export of a chat with bob, plus decisions nobody here gave: two grants
    and the auto-approve switch, "by ana@example.com via web"."""
    source = open_session(
        Settings(db=str(tmp_path / "source.db"), workspace=str(tmp_path / "ws")), actor=BOB
    )
    try:
        source.send(thread, "hello").collect()
        data: dict[str, Any] = json.loads(source.view(thread).export("json"))
    finally:
        source.close()
    by_ana = {"source": "web", "actor": ANA, "args": {}, "thread_id": thread, "decided_at": 1.0}
    data["decisions"] += [
        {
            **by_ana,
            "question": "review",
            "tool_call_id": "x1",
            "tool": "run_command",
            "decision": "approve",
            "always_allow": "*",
        },
        {
            **by_ana,
            "question": "grant",
            "tool_call_id": "x2",
            "tool": "write_file",
            "decision": "grant",
            "always_allow": "*",
        },
        {
            **by_ana,
            "question": "grant",
            "tool_call_id": "x3",
            "tool": "*",
            "decision": "grant",
            "always_allow": "*",
        },
    ]
    return data


def test_an_import_carries_no_authority(tmp_path: Path, env: dict[str, str]) -> None:  # noqa: F811
    """History moves, authority does not: the crafted export's grants and switch stay
    behind, the CLI says so, and bob's run_command still asks (approvers: ana)."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    thread = "imported-thread"
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(crafted_export(tmp_path, thread)))
    imported = gh(env, "import", str(path), code=0)
    assert (
        "dropped 2 grants and 1 auto-approve switch: authority does not move between databases"
        in imported.stdout
    )
    assert "No standing grants" in gh(env, "grants", thread, code=0).stdout
    settings = Settings(
        db=env["GATEHOUSE_DB"],
        workspace=env["GATEHOUSE_WORKSPACE"],
        policy={"run_command": {"mode": "ask", "approvers": [ANA]}},
    )
    session = open_session(settings, actor=BOB)
    try:
        assert session.view(thread).grants == [] and not session.view(thread).auto_approve
        # The history is there, every always-allow taken off it.
        assert [(r.tool, r.actor, r.always_allow) for r in session.view(thread).audit()] == [
            ("run_command", ANA, None)
        ]
        run = session.send(thread, "run: echo hi")
        run.collect()
        assert run.status == "awaiting_approval"
        assert session.view(thread).pending.actions[0].name == "run_command"  # type: ignore[union-attr]
    finally:
        session.close()


def test_session_and_async_session_imports_report_what_they_dropped(tmp_path: Path) -> None:
    data = crafted_export(tmp_path, "t-async")
    session = open_session(
        Settings(db=str(tmp_path / "target.db"), workspace=str(tmp_path / "ws")), actor=BOB
    )

    async def main() -> Any:
        return await (await AsyncSession(session).submit(ImportThread(data))).result()

    try:
        imported = asyncio.run(main())
        assert imported.thread_id == "t-async"
        assert imported.dropped.startswith("dropped 2 grants and 1 auto-approve switch:")
        assert session.view("t-async").grants == []
        again = session.submit(
            ImportThread({**data, "thread_id": "t-other"}, thread_id="t-sync")
        ).result()
        assert again.dropped and "2 grants" in again.dropped
        no_authority = session.submit(
            ImportThread({**data, "decisions": []}, thread_id="t-none")
        ).result()
        assert no_authority.dropped is None
        assert not [m for m in session.view("t-sync").messages if isinstance(m, ToolMessage)]
    finally:
        session.close()
