"""Every Gatehouse thread on `langgraph dev` with its true status (issue 33, items 1–2).

A thread the Session (the web app's and the terminal's way in) makes on the server's
database is listed by the server within seconds, with no restart and no registration,
as "interrupted" while it waits; decided in the terminal, it becomes "idle" on the
server too — also for a thread the server started itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph_sdk.errors import NotFoundError

from gatehouse.graph import open_session
from gatehouse.graph.protocol.operations import Delete
from gatehouse.graph.service.config import Settings
from tests.support.langgraph_dev import GRAPH, DevServer, langgraph_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, Any]]:
    home = tmp_path_factory.mktemp("sync-dev")
    workspace = home / "workspace"
    workspace.mkdir()
    with langgraph_dev(home, db=home / "gatehouse.db", workspace=workspace) as server:
        session = open_session(
            Settings(db=str(home / "gatehouse.db"), workspace=str(workspace)),
            source="terminal",
            actor="ana",
        )
        try:
            yield server, session
        finally:
            session.close()


def _until(check: Callable[[], Any], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = check()
        except NotFoundError:
            got = None
        if got:
            return got
        assert time.monotonic() < deadline, "the server never caught up with the thread index"
        time.sleep(0.1)


def test_a_terminal_thread_shows_on_the_server_waiting_then_idle(
    dev: tuple[DevServer, Any],
) -> None:
    server, session = dev
    client = server.client()
    run = session.send(None, "write synced.md: from the terminal")
    run.collect()
    tid = run.thread_id
    thread = _until(lambda: (t := client.threads.get(tid)) and t["status"] == "interrupted" and t)
    [interrupt] = [i for items in thread["interrupts"].values() for i in items]
    assert interrupt["value"]["action_requests"][0]["args"]["path"] == "synced.md"
    # What Agent Inbox lists: interrupted threads.
    assert tid in [t["thread_id"] for t in client.threads.search(status="interrupted", limit=100)]
    # Its state reads through the server too, and an SDK answer works on it.
    assert client.threads.get_state(tid)["interrupts"][0]["id"] == interrupt["id"]
    session.resume(tid, {"decisions": [{"type": "approve"}]}).collect()
    _until(lambda: client.threads.get(tid)["status"] == "idle")
    assert tid not in [
        t["thread_id"] for t in client.threads.search(status="interrupted", limit=100)
    ]


def test_a_server_thread_decided_in_the_terminal_is_idle_on_the_server(
    dev: tuple[DevServer, Any],
) -> None:
    server, session = dev
    client = server.client()
    tid = client.threads.create()["thread_id"]
    client.runs.wait(
        tid,
        GRAPH,
        input={"messages": [{"role": "user", "content": "write agent.md: from chat ui"}]},
    )
    assert client.threads.get(tid)["status"] == "interrupted"
    session.resume(tid, {"decisions": [{"type": "reject", "message": "no"}]}).collect()
    _until(lambda: client.threads.get(tid)["status"] == "idle")
    assert client.threads.get(tid)["interrupts"] == {}
    assert "gatehouse thread sync failed" not in server.log_text()


def test_a_thread_deleted_in_the_terminal_leaves_the_server(
    dev: tuple[DevServer, Any],
) -> None:
    """Both ways: one the terminal made and one the server made, each deleted in the
    terminal (the web app's delete is the same Session call)."""
    server, session = dev
    client = server.client()
    ours = session.send(None, "list files")
    ours.collect()
    theirs = client.threads.create()["thread_id"]
    client.runs.wait(theirs, GRAPH, input={"messages": [{"role": "user", "content": "list files"}]})
    for tid in (ours.thread_id, theirs):
        _until(lambda tid=tid: client.threads.get(tid)["status"] == "idle")
        session.submit(Delete(tid))

    def gone(tid: str) -> bool:
        try:
            client.threads.get(tid)
        except NotFoundError:
            return True
        return False

    _until(lambda: gone(ours.thread_id) and gone(theirs))
    listed = {t["thread_id"] for t in client.threads.search(limit=1000)}
    assert ours.thread_id not in listed and theirs not in listed
    assert "gatehouse thread sync failed" not in server.log_text()
