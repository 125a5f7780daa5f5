"""Agent Chat UI and Agent Inbox against a real `langgraph dev`, by their exact requests
(tests/support/ecosystem_clients.py), from a browser origin on another port that one
setting admits (issue 57, items 4 and 5).

    uv run --frozen pytest -n 0 tests/test_ecosystem_clients.py
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from tests.support.ecosystem_clients import AgentChatUI, AgentInbox
from tests.support.langgraph_dev import GRAPH, ROOT, DevServer, langgraph_dev

ORIGIN = "http://localhost:3001"
POLICY_WORDS = "Commands need a second look."


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, Path]]:
    home = tmp_path_factory.mktemp("clients-dev")
    workspace = home / "workspace"
    workspace.mkdir()
    config = home / "gatehouse.toml"
    config.write_text(f'[policy.run_command]\nmode = "ask"\ndescription = "{POLICY_WORDS}"\n')
    # The one setting; langgraph.json is the project's, unedited.
    with langgraph_dev(
        home,
        db=home / "gatehouse.db",
        workspace=workspace,
        GATEHOUSE_SERVER_ORIGINS=ORIGIN,
        GATEHOUSE_CONFIG=str(config),
    ) as server:
        yield server, workspace


def _paused(client: AgentChatUI, text: str) -> str:
    sdk = client.sdk()
    tid = sdk.threads.create(metadata={"graph_id": GRAPH})["thread_id"]
    client.send(tid, text)
    assert sdk.threads.get(tid)["status"] == "interrupted"
    return tid


def test_one_setting_admits_a_browser_client_on_another_port(dev: tuple[DevServer, Path]) -> None:
    server, _ = dev
    cors = json.loads((ROOT / "langgraph.json").read_text())["http"]["cors"]
    assert ORIGIN not in cors["allow_origins"]  # nothing edited by hand for it
    inbox = AgentInbox(server.url, server.secret, ORIGIN)
    preflight = inbox.preflight("/threads/search")
    assert preflight.status_code == 200, preflight.text
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    assert "x-api-key" in preflight.headers["access-control-allow-headers"].lower()
    real = httpx.post(f"{server.url}/threads/search", json={}, headers=inbox.headers)
    assert real.status_code == 200 and real.headers["access-control-allow-origin"] == ORIGIN
    # Origins the setting does not name are still refused before CORS, key or not.
    for other in ("http://localhost:3002", "https://evil.example"):
        foreign = AgentInbox(server.url, server.secret, other)
        refused = foreign.preflight("/threads/search")
        assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
        assert (
            httpx.post(f"{server.url}/threads/search", json={}, headers=foreign.headers).status_code
            == 403
        )


def test_a_wrong_key_fails_agent_chat_uis_connection_check(dev: tuple[DevServer, Path]) -> None:
    server, _ = dev
    assert AgentChatUI(server.url, server.secret, ORIGIN).connection_ok()
    for key in ("not-the-key", None):
        chat = AgentChatUI(server.url, key, ORIGIN)
        assert not chat.connection_ok()
        response = httpx.get(f"{server.url}/info", headers=chat.headers)
        assert response.status_code == 401 and "valid key" in response.text
    # Agent Inbox with a wrong key: its first request (the inbox list) fails, visibly.
    with pytest.raises(httpx.HTTPStatusError) as listed:
        list(AgentInbox(server.url, "not-the-key", ORIGIN).rows())
    assert listed.value.response.status_code in (401, 403)
    # The same check by bearer.
    with pytest.raises(httpx.HTTPStatusError) as refused:
        httpx.get(
            f"{server.url}/info", headers={"Authorization": "Bearer wrong"}
        ).raise_for_status()
    assert refused.value.response.status_code == 401
    assert httpx.get(f"{server.url}/info", headers=server.headers).status_code == 200
    # Load balancers' probe stays open and says only "up".
    assert httpx.get(f"{server.url}/ok").status_code == 200


def test_agent_inbox_rows_show_each_call_and_accept_approves_what_was_shown(
    dev: tuple[DevServer, Path],
) -> None:
    server, workspace = dev
    chat = AgentChatUI(server.url, server.secret, ORIGIN)
    inbox = AgentInbox(server.url, server.secret, ORIGIN)
    first = _paused(chat, "write first.md: one")
    second = _paused(chat, "write second.md: two")
    rows = {r.thread_id: r for r in inbox.rows()}
    one, two = rows[first], rows[second]
    # Rows say what they are about, and differ.
    assert one.title == two.title == "write_file"
    assert one.preview.startswith("write_file first.md") and two.preview.startswith(
        "write_file second.md"
    )
    # Its edit form and its Accept carry the real arguments.
    assert one.interrupt["action_request"]["args"] == {"path": "first.md", "content": "one\n"}
    assert '"content": "one\\n"' in one.interrupt["description"]
    parts = inbox.accept(one)
    assert not [p for p in parts if p.event == "error"], parts
    assert (workspace / "first.md").read_text().strip() == "one"
    assert chat.sdk().threads.get(first)["status"] == "idle"
    # An edit through its form runs the edited arguments.
    edited = {"action": "write_file", "args": {"path": "second.md", "content": "edited"}}
    assert not [
        p for p in inbox.respond(second, {"type": "edit", "args": edited}) if p.event == "error"
    ]
    assert (workspace / "second.md").read_text().strip() == "edited"


def test_agent_inbox_decides_a_two_call_turn_with_both_calls_shown(
    dev: tuple[DevServer, Path],
) -> None:
    server, workspace = dev
    chat = AgentChatUI(server.url, server.secret, ORIGIN)
    inbox = AgentInbox(server.url, server.secret, ORIGIN)
    tid = _paused(chat, "write a2.md: x then write b2.md: y")
    [row] = [r for r in inbox.rows() if r.thread_id == tid]
    assert row.preview.startswith("write_file a2.md (call 1 of 2)")
    description = row.interrupt["description"]
    assert '"path": "a2.md"' in description and '"path": "b2.md"' in description
    assert "Accept approves all 2" in description
    parts = inbox.accept(row)
    assert not [p for p in parts if p.event == "error"], parts
    assert (workspace / "a2.md").exists() and (workspace / "b2.md").exists()

    # Ignore (Agent Inbox's "ignore" response, as an older inbox or a script sends it)
    # rejects every call; nothing runs and the thread takes new input.
    tid = _paused(chat, "write a3.md: x then write b3.md: y")
    parts = inbox.respond(tid, {"type": "ignore", "args": None})
    assert not [p for p in parts if p.event == "error"], parts
    assert not (workspace / "a3.md").exists() and not (workspace / "b3.md").exists()
    tools = [
        m for m in chat.sdk().threads.get_state(tid)["values"]["messages"] if m["type"] == "tool"
    ]
    assert [m["status"] for m in tools[-2:]] == ["error", "error"]
    assert chat.sdk().threads.get(tid)["status"] == "idle"


def test_agent_chat_ui_decides_each_call_of_a_turn(dev: tuple[DevServer, Path]) -> None:
    server, workspace = dev
    chat = AgentChatUI(server.url, server.secret, ORIGIN)
    tid = _paused(chat, "write a4.md: x then write b4.md: y")
    [pending] = chat.sdk().threads.get_state(tid)["interrupts"]
    assert [a["arguments"] for a in pending["value"]["action_requests"]] == [
        {"path": "a4.md", "content": "x\n"},
        {"path": "b4.md", "content": "y\n"},
    ]
    parts = chat.decide(tid, [{"type": "approve"}, {"type": "reject", "message": "not b"}])
    assert not [p for p in parts if p.event == "error"], parts
    assert (workspace / "a4.md").exists() and not (workspace / "b4.md").exists()


def test_rows_paused_before_the_server_started_keep_their_own_times(tmp_path: Path) -> None:
    """Agent Inbox dates a row by the thread's `updated_at`: threads paused in the
    terminal before the server started are listed with the time each paused, not the
    one moment the server listed them all."""
    from gatehouse.graph import open_session
    from gatehouse.graph.service.config import Settings

    db, workspace = tmp_path / "gatehouse.db", tmp_path / "workspace"
    workspace.mkdir()
    session = open_session(Settings(db=str(db), workspace=str(workspace)))
    try:
        first = session.send(None, "write early.md: 1")
        first.collect()
        second = session.send(None, "write late.md: 2")
        second.collect()
        paused = {t.thread_id: t.pending_since for t in session.thread_list().threads}
    finally:
        session.close()
    assert set(paused) == {first.thread_id, second.thread_id}
    with langgraph_dev(
        tmp_path / "server", db=db, workspace=workspace, GATEHOUSE_SERVER_ORIGINS=ORIGIN
    ) as server:
        inbox = AgentInbox(server.url, server.secret, ORIGIN)
        deadline, rows = time.monotonic() + 60, {}
        while len(rows) < 2:
            assert time.monotonic() < deadline, rows
            rows = {r.thread_id: r for r in inbox.rows() if r.thread_id in paused}
    shown = {tid: datetime.fromisoformat(r.updated_at).timestamp() for tid, r in rows.items()}
    for tid, since in paused.items():
        assert since is not None and abs(shown[tid] - since) < 0.001, (shown, paused)
    assert shown[first.thread_id] < shown[second.thread_id]
    assert rows[first.thread_id].preview.startswith("write_file early.md")


def test_a_policys_description_never_hides_the_call_agent_inbox_accepts(
    dev: tuple[DevServer, Path],
) -> None:
    """Issue 55, item 3: with a policy description, Agent Inbox read `{}` and the policy's
    words, and its Accept ran a command it never showed."""
    server, workspace = dev
    chat = AgentChatUI(server.url, server.secret, ORIGIN)
    inbox = AgentInbox(server.url, server.secret, ORIGIN)
    tid = _paused(chat, "run: echo shown-in-full > proof.txt")
    [row] = [r for r in inbox.rows() if r.thread_id == tid]
    assert row.title == "run_command"
    assert row.interrupt["action_request"]["args"]["command"] == "echo shown-in-full > proof.txt"
    description = row.interrupt["description"]
    assert POLICY_WORDS in description and "echo shown-in-full > proof.txt" in description
    assert row.preview.startswith("run_command echo shown-in-full")
    assert not [p for p in inbox.accept(row) if p.event == "error"]
    assert (workspace / "proof.txt").read_text().strip() == "shown-in-full"
    # An accept that echoes another command than the one shown is refused; nothing runs.
    tid = _paused(chat, "run: echo second > second.txt")
    [row] = [r for r in inbox.rows() if r.thread_id == tid]
    forged = {"action": "run_command", "args": {"command": "echo forged > forged.txt"}}
    parts = inbox.respond(tid, {"type": "accept", "args": forged})
    assert [p for p in parts if p.event == "error"]
    assert not (workspace / "forged.txt").exists() and not (workspace / "second.txt").exists()


def test_the_server_admits_the_origins_of_one_setting_and_the_web_apps() -> None:
    from gatehouse.graph.service.access import STUDIO_ORIGIN, load_access
    from gatehouse.graph.service.server_http import server_origins

    assert server_origins(load_access(env={"GATEHOUSE_SERVER_ORIGINS": ORIGIN})) == [
        STUDIO_ORIGIN,
        ORIGIN,
    ]
    both = load_access(
        env={
            "GATEHOUSE_ALLOWED_ORIGINS": "https://gatehouse.example.com",
            "GATEHOUSE_SERVER_ORIGINS": ORIGIN,
        }
    )
    assert server_origins(both) == [STUDIO_ORIGIN, ORIGIN, "https://gatehouse.example.com"]
    # The defaults: Studio and Agent Chat UI / Agent Inbox on :3000.
    assert server_origins(load_access(env={})) == [
        STUDIO_ORIGIN,
        "http://localhost:3000",
        "http://127.0.0.1:3000",
    ]
