"""LangGraph Studio on the same threads (issue 20): `langgraph dev` on the project's
langgraph.json keeps its threads in Gatehouse's own database, so a thread paused in
the web app or the terminal opens, is inspected, time-travelled, forked and approved
through langgraph-sdk (what Studio uses), and a thread started from the SDK shows in
the thread list with its pending approval and is approved by `gatehouse approve`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from gatehouse.graph import Approval, Session, open_session
from gatehouse.graph.service.config import Settings
from tests.support.langgraph_dev import GRAPH, langgraph_cli, langgraph_dev, server_env

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("studio")
    db, workspace = home / "gatehouse.db", home / "workspace"
    workspace.mkdir()
    with langgraph_dev(home / "server", db=db, workspace=workspace) as server:
        session = open_session(Settings(db=str(db), workspace=str(workspace)))
        try:
            yield {
                "db": db,
                "workspace": workspace,
                "server": server,
                "session": session,
                "client": server.client(),
            }
        finally:
            session.close()


def cli(world: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**server_env(world["db"], world["workspace"]), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gatehouse.ui.term.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_thread_paused_in_the_app_is_approved_in_studio_and_the_app_sees_it(
    world: dict[str, Any],
) -> None:
    session: Session = world["session"]
    client = world["client"]
    run = session.send(None, "write studio.md: from the web app")
    run.collect()
    thread = run.thread_id
    assert isinstance(session.view(thread).pending, Approval)
    # What `gatehouse studio --thread ID` does: make the thread known to the server.
    client.threads.create(thread_id=thread, graph_id=GRAPH, if_exists="do_nothing")
    state = client.threads.get_state(thread)
    [interrupt] = state["interrupts"]
    assert interrupt["value"]["action_requests"][0]["args"]["path"] == "studio.md"
    client.runs.wait(thread, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}})
    assert (world["workspace"] / "studio.md").read_text() == "from the web app\n"
    # The app's thread list and the terminal see the outcome.
    assert session.view(thread).pending is None
    assert session.view(thread).info.status == "completed"
    shown = cli(world, "show", thread, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["pending"] is None and any(m["role"] == "tool" for m in data["messages"])


def test_a_thread_started_in_studio_shows_in_the_app_and_the_terminal_approves_it(
    world: dict[str, Any],
) -> None:
    client = world["client"]
    thread = str(uuid.uuid4())
    client.runs.wait(
        thread,
        GRAPH,
        input={"messages": [{"role": "user", "content": "write from-studio.md: hi"}]},
        if_not_exists="create",
    )
    session: Session = world["session"]
    listed = {t.thread_id: t for t in session.thread_list().threads}
    assert thread in listed and listed[thread].status == "awaiting_approval"
    assert thread in {t.thread_id for t in session.thread_list().awaiting_approval}
    threads = cli(world, "threads", "--json")
    assert any(
        row["thread_id"] == thread and row["pending"] == 1 for row in json.loads(threads.stdout)
    ), threads.stdout
    request = next(
        p["interrupt_id"]
        for p in json.loads(cli(world, "pending", "--json").stdout)
        if p["thread_id"] == thread
    )
    approved = cli(world, "approve", thread, "--interrupt-id", request, "--json")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert (world["workspace"] / "from-studio.md").read_text() == "hi\n"
    final = client.threads.get_state(thread)
    assert not final["next"] and [m["type"] for m in final["values"]["messages"]][-1] == "ai"


def test_history_time_travel_and_fork_through_the_sdk_on_an_app_thread(
    world: dict[str, Any],
) -> None:
    session: Session = world["session"]
    client = world["client"]
    run = session.send(None, "list files")
    run.collect()
    thread = run.thread_id
    session.send(thread, "write tt.md: first").collect()
    session.resume(thread, {"decisions": [{"type": "approve"}]}).collect()
    client.threads.create(thread_id=thread, graph_id=GRAPH, if_exists="do_nothing")

    history = client.threads.get_history(thread, limit=100)
    ours = [
        s.config["configurable"]["checkpoint_id"]
        for s in session.agent.get_state_history({"configurable": {"thread_id": thread}})
    ]
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == ours

    # Time travel: run again from the checkpoint where the write waited for approval.
    # The write already ran: the replay shows its journaled result, with no card and
    # no second run (the file keeps what happened to it since).
    (world["workspace"] / "tt.md").write_text("changed since")
    paused = next(h for h in history if h["interrupts"])
    client.runs.wait(thread, GRAPH, input=None, checkpoint_id=paused["checkpoint"]["checkpoint_id"])
    again = client.threads.get_state(thread)
    assert not again["interrupts"]
    result = [m for m in again["values"]["messages"] if m["type"] == "tool"][-1]
    assert "tt.md" in result["content"] and result["status"] != "error"
    assert (world["workspace"] / "tt.md").read_text() == "changed since"

    # Fork: edit the state of an earlier checkpoint; the app reads the new head.
    first_turn = next(h for h in reversed(history) if len(h["values"].get("messages", [])) == 1)
    client.threads.update_state(
        thread,
        {"messages": [{"role": "user", "content": "forked", "id": "fork-1"}]},
        checkpoint_id=first_turn["checkpoint"]["checkpoint_id"],
    )
    texts = [m.content for m in session.view(thread).transcript if m.role == "user"]
    assert texts[-1] == "forked"


def test_gatehouse_studio_registers_a_thread_and_prints_its_link(
    world: dict[str, Any], tmp_path: Path
) -> None:
    session: Session = world["session"]
    run = session.send(None, "write linked.md: x")
    run.collect()
    thread = run.thread_id
    port = str(os.getpid() % 20000 + 30000)
    env = {**server_env(world["db"], world["workspace"]), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gatehouse.ui.term.cli",
            "studio",
            "--no-browser",
            "--port",
            port,
            "--thread",
            thread,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert langgraph_cli()
        deadline, seen = time.monotonic() + 120, ""
        while "Authorization: Bearer" not in seen:
            assert proc.poll() is None, seen
            assert time.monotonic() < deadline, seen
            seen += proc.stdout.readline()  # type: ignore[union-attr]
        assert f"/studio/thread/{thread}?baseUrl=http%3A%2F%2F127.0.0.1%3A{port}" in seen
        assert "Authorization: Bearer" in seen  # how to connect Studio with credentials
        info = get_sync_client(
            url=f"http://127.0.0.1:{port}", headers=world["server"].headers
        ).threads.get(thread)
        assert info["thread_id"] == thread
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


@pytest.mark.postgres
def test_studio_and_the_app_share_threads_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    """`GATEHOUSE_DB=postgresql://…` is honoured by the server: both ways across."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with langgraph_dev(tmp_path / "server", db=postgres_url, workspace=workspace) as server:
        client = server.client()
        session = open_session(Settings(db=postgres_url, workspace=str(workspace)))
        try:
            thread = str(uuid.uuid4())
            client.runs.wait(
                thread,
                GRAPH,
                input={"messages": [{"role": "user", "content": "write pg.md: from studio"}]},
                if_not_exists="create",
            )
            assert thread in {t.thread_id for t in session.thread_list().awaiting_approval}
            session.resume(thread, {"decisions": [{"type": "approve"}]}).collect()
            assert (workspace / "pg.md").read_text() == "from studio\n"
            assert not client.threads.get_state(thread)["next"]

            run = session.send(None, "write pg2.md: from the app")
            run.collect()
            client.threads.create(thread_id=run.thread_id, graph_id=GRAPH, if_exists="do_nothing")
            client.runs.wait(
                run.thread_id, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}}
            )
            assert (workspace / "pg2.md").read_text() == "from the app\n"
            assert session.view(run.thread_id).info.status == "completed"
        finally:
            session.close()
