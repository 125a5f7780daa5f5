"""The same approval scenarios through the three ways into a thread (issue 15): the
Session, the raw compiled graph with `Command`, and langgraph-sdk against
`langgraph dev` on the project's langgraph.json. All give the same result, because
the guarantees are kept by the graph and its storage; the three share one database
(the server's checkpointer is Gatehouse's own storage), so one reader checks each.

Scenarios: approve, edit, reject, respond, a bad answer, two resumes at once, and a
process killed inside an approved call.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from gatehouse.graph.protocol.pauses import pause_from
from tests.support.gate_client import RawClient, Refused, SdkClient, SessionClient
from tests.support.langgraph_dev import langgraph_dev

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ["session", "raw", "sdk"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("matrix")
    db, workspace = home / "gatehouse.db", home / "workspace"
    workspace.mkdir()
    with langgraph_dev(home / "server", db=db, workspace=workspace) as server:
        clients = {
            "session": SessionClient(str(db), str(workspace)),
            "raw": RawClient(str(db), str(workspace)),
            "sdk": SdkClient(server.url, server.headers),
        }
        try:
            yield {
                "db": db,
                "workspace": workspace,
                "home": home,
                "server": server,
                "clients": clients,
                "reader": clients["raw"],
            }
        finally:
            for client in clients.values():
                client.close()


def new_thread() -> str:
    return str(uuid.uuid4())


def state(world: dict[str, Any], thread: str) -> Any:
    return world["reader"].agent.get_state({"configurable": {"thread_id": thread}})


def pause_of(world: dict[str, Any], thread: str) -> Any:
    [interrupt] = state(world, thread).interrupts
    return pause_from(thread, interrupt.id, interrupt.value)


def results(world: dict[str, Any], thread: str) -> list[ToolMessage]:
    return [m for m in state(world, thread).values["messages"] if isinstance(m, ToolMessage)]


def file(world: dict[str, Any], name: str) -> Path:
    return world["workspace"] / name


@pytest.mark.parametrize("via", CLIENTS)
def test_approve(world: dict[str, Any], via: str) -> None:
    client, thread = world["clients"][via], new_thread()
    client.send(thread, f"write ok-{via}.md: hello")
    assert pause_of(world, thread).actions[0].name == "write_file"
    assert not file(world, f"ok-{via}.md").exists()
    client.resume(thread, {"decisions": [{"type": "approve"}]})
    assert file(world, f"ok-{via}.md").read_text() == "hello\n"
    [result] = results(world, thread)
    assert result.status != "error" and not state(world, thread).interrupts


@pytest.mark.parametrize("via", CLIENTS)
def test_edit(world: dict[str, Any], via: str) -> None:
    client, thread = world["clients"][via], new_thread()
    client.send(thread, f"write ed-{via}.md: hello")
    edited = {"name": "write_file", "args": {"path": f"ed-{via}.md", "content": "EDITED"}}
    client.resume(thread, {"decisions": [{"type": "edit", "edited_action": edited}]})
    assert file(world, f"ed-{via}.md").read_text() == "EDITED"
    [result] = results(world, thread)
    assert "changed the arguments" in str(result.content)


@pytest.mark.parametrize("via", CLIENTS)
def test_reject(world: dict[str, Any], via: str) -> None:
    client, thread = world["clients"][via], new_thread()
    client.send(thread, f"write rj-{via}.md: hello")
    client.resume(thread, {"decisions": [{"type": "reject", "message": "not today"}]})
    assert not file(world, f"rj-{via}.md").exists()
    [result] = results(world, thread)
    assert (
        result.status == "error"
        and "declined" in str(result.content)
        and "not today" in str(result.content)
    )


@pytest.mark.parametrize("via", CLIENTS)
def test_respond(world: dict[str, Any], via: str) -> None:
    client, thread = world["clients"][via], new_thread()
    client.send(thread, f"write rs-{via}.md: hello")
    client.resume(thread, {"decisions": [{"type": "respond", "message": "already done by hand"}]})
    assert not file(world, f"rs-{via}.md").exists()
    [result] = results(world, thread)
    assert result.content == "already done by hand"


@pytest.mark.parametrize("via", CLIENTS)
def test_bad_answer_changes_nothing(world: dict[str, Any], via: str) -> None:
    client, thread = world["clients"][via], new_thread()
    client.send(thread, f"write bad-{via}.md: hello")
    before = pause_of(world, thread)
    for bad in (
        {"decisions": []},
        {"decisions": [{"type": "nope"}]},
        {
            "decisions": [
                {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": 3}}}
            ]
        },
    ):
        with pytest.raises(Refused):
            client.resume(thread, bad)
        now = state(world, thread)
        assert [t.error for t in now.tasks] == [None], f"a failed task after {bad}"
        assert pause_of(world, thread) == before
    assert not file(world, f"bad-{via}.md").exists()
    client.resume(thread, {"decisions": [{"type": "approve"}]})
    assert file(world, f"bad-{via}.md").read_text() == "hello\n"


@pytest.mark.parametrize("via", CLIENTS)
def test_two_resumes_at_once_run_the_call_once(world: dict[str, Any], via: str) -> None:
    client, thread = world["clients"][via], new_thread()
    counter = f"twice-{via}.txt"
    client.send(thread, f"run: echo ran >> {counter}")
    assert pause_of(world, thread).actions[0].name == "run_command"
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def resume() -> None:
        start.wait()
        try:
            kwargs = {"multitask_strategy": "enqueue"} if via == "sdk" else {}
            client.resume(thread, {"decisions": [{"type": "approve"}]}, **kwargs)
            outcomes.append("ok")
        except Exception as exc:  # the one that came second is told so
            outcomes.append(type(exc).__name__)

    workers = [threading.Thread(target=resume) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert file(world, counter).read_text() == "ran\n", outcomes
    assert len([r for r in results(world, thread) if r.name == "run_command"]) == 1


def _journal_started(db: Path, thread: str) -> bool:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT status FROM gatehouse_journal WHERE thread_id=?", (thread,)
        ).fetchone()
    return row is not None and row[0] == "started"


def _wait_started(db: Path, thread: str, alive: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not _journal_started(db, thread):
        assert alive(), "the process ended before the call started"
        assert time.monotonic() < deadline, "the call never started"
        time.sleep(0.05)
    time.sleep(0.3)  # inside the command now


@pytest.mark.parametrize("via", CLIENTS)
def test_a_process_killed_inside_an_approved_call_asks_the_outcome(
    world: dict[str, Any], via: str
) -> None:
    client, thread, db = world["clients"][via], new_thread(), world["db"]
    counter = f"crash-{via}.txt"
    client.send(thread, f"run: echo ran >> {counter} && sleep 60")
    approve = json.dumps({"decisions": [{"type": "approve"}]})
    if via == "sdk":
        # The server itself dies mid-call; a second server on the same database takes over.
        with langgraph_dev(world["home"] / "victim", db=db, workspace=world["workspace"]) as victim:
            victim_client = SdkClient(victim.url, victim.headers)
            victim_client.register(thread)
            victim_client.client.runs.create(
                thread, "gatehouse", command={"resume": json.loads(approve)}
            )
            _wait_started(db, thread, lambda: victim.proc.poll() is None)
            victim.kill()
    else:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.gate_client",
                via,
                str(db),
                str(world["workspace"]),
                "resume",
                thread,
                approve,
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _wait_started(db, thread, lambda: proc.poll() is None)
        proc.kill()
        proc.wait(10)
    assert file(world, counter).read_text() == "ran\n"
    # Whoever picks the thread up is asked what happened; the call is not run again.
    client.retry(thread)
    pause = pause_of(world, thread)
    assert pause.kind == "outcome_unknown" and pause.call.name == "run_command"
    client.resume(thread, {"type": "mark_failed", "message": "killed mid-way"})
    [result] = [r for r in results(world, thread) if r.name == "run_command"]
    assert result.status == "error" and "killed mid-way" in str(result.content)
    assert file(world, counter).read_text() == "ran\n"
