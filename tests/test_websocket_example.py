"""examples/websocket_app.py under a real uvicorn, driven by a real WebSocket client.

The server is killed between the pause and the decision and started again on the
same database: the run continues from the database alone and streams to the new
connection. Offline demo model, so no network and no key.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from gatehouse.graph.protocol.events import parse_event

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
APPROVE = {"decisions": [{"type": "approve"}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """uvicorn running the example in a subprocess, on a fixed port and database."""

    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.dir = tmp_path
        self.workspace = tmp_path / "workspace"
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in {
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "GATEHOUSE_MODEL_BASE_URL",
                "GATEHOUSE_CONFIG",
            }
        }
        self.env.update(
            GATEHOUSE_DB=str(tmp_path / "gatehouse.db"), GATEHOUSE_WORKSPACE=str(self.workspace)
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self) -> int:
        self.starts += 1
        log = open(self.dir / f"server-{self.starts}.log", "wb")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "websocket_app:app",
                "--app-dir",
                str(EXAMPLES),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            cwd=self.dir,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.log()}")
            try:
                health = httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).json()
                assert health["pid"] == self.proc.pid
                return int(health["pid"])
            except (httpx.HTTPError, AssertionError):
                time.sleep(0.1)
        raise AssertionError(f"server did not come up: {self.log()}")

    def kill(self) -> None:
        """No shutdown: whatever the process held in memory is lost."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def log(self) -> str:
        return (self.dir / f"server-{self.starts}.log").read_text(errors="replace")[-3000:]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    s.start()
    yield s
    s.kill()


def receive(ws: ClientConnection) -> dict[str, Any]:
    return json.loads(ws.recv(timeout=20))


def receive_until(ws: ClientConnection, kind: str) -> list[dict[str, Any]]:
    messages = [receive(ws)]
    while messages[-1]["type"] != kind:
        messages.append(receive(ws))
    return messages


def run_events(ws: ClientConnection) -> list[dict[str, Any]]:
    """Messages up to the end of the run; every one must be a valid event."""
    messages = receive_until(ws, "run_finished")
    for m in messages:
        assert parse_event(m).to_dict() == m
    return messages


def pause_a_write(server: Server, user: str | None = None) -> tuple[str, str]:
    query = f"?user={user}" if user else ""
    with connect(server.url + query) as ws:
        ws.send(json.dumps({"type": "message", "text": "write todo.md: buy milk"}))
        events = receive_until(ws, "approval_required")
    approval = events[-1]
    assert approval["request"]["action_requests"][0]["name"] == "write_file"
    assert events[0]["type"] == "run_started"
    assert any(e["type"] == "text_delta" for e in events)
    return approval["thread_id"], approval["interrupt_id"]


def test_resume_on_a_restarted_server(server: Server) -> None:
    thread_id, interrupt_id = pause_a_write(server)
    first_pid = server.proc.pid if server.proc else None
    server.kill()
    assert not (server.workspace / "todo.md").exists()

    assert server.start() != first_pid
    with connect(server.url) as ws:
        ws.send(json.dumps({"type": "pending", "thread_id": thread_id}))
        pending = receive(ws)
        assert pending["type"] == "pending"
        assert pending["pending"]["interrupt_id"] == interrupt_id

        ws.send(json.dumps({"type": "decisions", "thread_id": thread_id, "answer": APPROVE}))
        events = run_events(ws)
    kinds = [e["type"] for e in events]
    assert events[0] == {
        **events[0],
        "type": "run_started",
        "kind": "resume",
        "thread_id": thread_id,
    }
    assert kinds.index("tool_started") < kinds.index("tool_finished") < kinds.index("text_delta")
    finished = next(e for e in events if e["type"] == "tool_finished")
    assert finished["status"] == "ok" and finished["name"] == "write_file"
    assert events[-1]["status"] == "completed"
    assert (server.workspace / "todo.md").read_text() == "buy milk\n"

    # The thread goes on on the same connection.
    with connect(server.url) as ws:
        ws.send(json.dumps({"type": "message", "thread_id": thread_id, "text": "read todo.md"}))
        events = run_events(ws)
    assert events[-1]["status"] == "completed"
    assert any(e["type"] == "tool_finished" and "buy milk" in e["output"] for e in events)


def test_a_bad_decision_is_refused_and_changes_nothing(server: Server) -> None:
    thread_id, interrupt_id = pause_a_write(server, user="alice")
    with connect(server.url + "?user=alice") as ws:
        bad = [
            {"decisions": []},
            {
                "decisions": [
                    {"type": "edit", "edited_action": {"name": "read_file", "args": {"path": "x"}}}
                ]
            },
            {"decisions": [{"type": "maybe"}]},
            "approve",
        ]
        for answer in bad:
            ws.send(json.dumps({"type": "decisions", "thread_id": thread_id, "answer": answer}))
            refused = receive(ws)
            assert refused["type"] == "refused" and refused["message"], refused
        ws.send(
            json.dumps(
                {
                    "type": "decisions",
                    "thread_id": thread_id,
                    "answer": APPROVE,
                    "interrupt_id": "old",
                }
            )
        )
        assert receive(ws)["type"] == "refused"
        ws.send("not json")
        assert receive(ws)["type"] == "refused"
        ws.send(json.dumps({"type": "launch"}))
        assert receive(ws)["type"] == "refused"
        ws.send(json.dumps({"type": "message", "thread_id": thread_id, "text": "hello?"}))
        assert "waiting for a decision" in receive(ws)["message"]

        ws.send(json.dumps({"type": "pending", "thread_id": thread_id}))
        assert receive(ws)["pending"]["interrupt_id"] == interrupt_id

    # Another user cannot see or decide alice's thread.
    with connect(server.url + "?user=bob") as ws:
        ws.send(json.dumps({"type": "decisions", "thread_id": thread_id, "answer": APPROVE}))
        assert receive(ws) == {"type": "refused", "message": f"thread {thread_id} not found"}

    with connect(server.url + "?user=alice") as ws:
        ws.send(
            json.dumps(
                {
                    "type": "decisions",
                    "thread_id": thread_id,
                    "answer": APPROVE,
                    "interrupt_id": interrupt_id,
                }
            )
        )
        events = run_events(ws)
    assert events[-1]["status"] == "completed"
    assert (server.workspace / "todo.md").read_text() == "buy milk\n"


def test_cancel_without_a_run_is_refused(server: Server) -> None:
    with connect(server.url) as ws:
        ws.send(json.dumps({"type": "cancel"}))
        assert receive(ws)["type"] == "refused"
        ws.send(json.dumps({"type": "message", "text": "list files"}))
        assert run_events(ws)[-1]["status"] == "completed"


def test_approve_and_reject_answer_every_pending_call(server: Server) -> None:
    """The example's shorthands: the server builds the typed answer (gatehouse.graph.protocol.operations)
    for every call of the pending request."""
    thread_id, interrupt_id = pause_a_write(server)
    with connect(server.url) as ws:
        ws.send(json.dumps({"type": "approve", "thread_id": thread_id, "interrupt_id": 7}))
        assert "interrupt_id" in receive(ws)["message"]
        ws.send(
            json.dumps(
                {
                    "type": "reject",
                    "thread_id": thread_id,
                    "message": "not today",
                    "interrupt_id": interrupt_id,
                }
            )
        )
        events = run_events(ws)
        assert events[0]["kind"] == "resume" and events[-1]["status"] == "completed"
        assert any(e["type"] == "tool_finished" and e["status"] == "rejected" for e in events), (
            events
        )
        assert not (server.workspace / "todo.md").exists()

        # Nothing waits now: an approve is refused, and the thread goes on.
        ws.send(json.dumps({"type": "approve", "thread_id": thread_id}))
        assert "not waiting for an approval" in receive(ws)["message"]
        ws.send(
            json.dumps(
                {"type": "message", "thread_id": thread_id, "text": "write todo.md: buy milk"}
            )
        )
        paused = run_events(ws)
        assert (
            paused[-1]["status"] == "awaiting_approval"
            and paused[-2]["type"] == "approval_required"
        )
        ws.send(json.dumps({"type": "approve", "thread_id": thread_id}))
        events = run_events(ws)
    assert events[-1]["status"] == "completed"
    assert (server.workspace / "todo.md").read_text() == "buy milk\n"
