"""A ping when a person must decide (issue 33, item 8): a webhook on loopback.

The receiver is a real HTTP server on 127.0.0.1 that records what it gets (and can
fail its first requests to exercise the retries). Pauses come from the Session (what
the web app and the terminal use) and from langgraph-sdk against `langgraph dev`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gatehouse.graph import DecisionError, open_session
from gatehouse.graph.service.config import Settings
from gatehouse.graph.store.notifications import NotificationLog
from tests.support.clean_env import without_settings
from tests.support.langgraph_dev import GRAPH, langgraph_dev

SECRET = "s3cret-for-tests"


class Receiver:
    def __init__(self, fail_first: int = 0) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.fail_first = fail_first
        self.seen = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.seen:
                    receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    fail = len(receiver.got) <= receiver.fail_first
                    receiver.seen.notify_all()
                self.send_response(500 if fail else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n: int, timeout: float = 20) -> list[dict[str, Any]]:
        with self.seen:
            assert self.seen.wait_for(lambda: len(self.got) >= n, timeout), (
                f"got {len(self.got)} of {n} pings"
            )
        return [json.loads(body) for _, body in self.got]

    def wait_for_threads(self, thread_ids: set[str], since: int, timeout: float = 60) -> None:
        """Until pings for every one of `thread_ids` arrived after the first `since` requests."""

        def arrived() -> bool:
            return thread_ids <= {json.loads(body)["thread_id"] for _, body in self.got[since:]}

        with self.seen:
            assert self.seen.wait_for(arrived, timeout), f"no ping for some of {thread_ids}"

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _settings(tmp_path: Path, url: str, **notify: Any) -> Settings:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return Settings(
        db=str(tmp_path / "gatehouse.db"),
        workspace=str(workspace),
        notify_webhook=url,
        notify_secret=SECRET,
        notify_link="http://127.0.0.1:8613",
        **notify,
    )


def test_a_pause_pings_the_webhook_once_signed_and_recorded(
    tmp_path: Path, receiver: Receiver
) -> None:
    session = open_session(_settings(tmp_path, receiver.url))
    try:
        run = session.send(None, "write todo.md: buy milk")
        run.collect()
        [ping] = receiver.wait_for(1)
        headers, body = receiver.got[0]
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["x-gatehouse-signature"], expected)
        assert ping["event"] == "approval_required" and ping["thread_id"] == run.thread_id
        [call] = ping["calls"]
        assert (
            call["name"] == "write_file"
            and call["args"]["path"] == "todo.md"
            and call["risk"] == "write"
        )
        assert ping["link"] == f"http://127.0.0.1:8613/?thread={run.thread_id}"
        pending = session.view(run.thread_id).pending
        assert pending is not None and ping["interrupt_id"] == pending.interrupt_id
        # A refused answer and a second look change nothing: one pause, one ping.
        with pytest.raises(DecisionError):
            session.resume(run.thread_id, {"decisions": []})
        session.resume(run.thread_id, {"decisions": [{"type": "approve"}]}).collect()
        log = NotificationLog(session.info["db"])
        deadline = time.monotonic() + 10
        while (rows := log.list(run.thread_id)) and rows[0].status != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        [row] = rows
        assert row.status == "delivered" and row.attempts == 1 and row.delivered_at
        assert len(receiver.got) == 1
        log.close()
    finally:
        session.close()


def test_only_the_risks_the_policy_names_ping(tmp_path: Path, receiver: Receiver) -> None:
    session = open_session(_settings(tmp_path, receiver.url, notify_risks=["execute"]))
    try:
        session.send(None, "write quiet.md: no ping").collect()
        run = session.send(None, "run: touch pinged.txt")
        run.collect()
        [ping] = receiver.wait_for(1)
        assert ping["thread_id"] == run.thread_id and ping["risks"] == ["execute"]
        time.sleep(0.3)  # a ping for the write would have been sent in the same breath
        assert len(receiver.got) == 1
    finally:
        session.close()


def test_a_failing_webhook_is_retried_with_backoff(tmp_path: Path) -> None:
    flaky = Receiver(fail_first=2)
    session = open_session(_settings(tmp_path, flaky.url))
    try:
        run = session.send(None, "write todo.md: x")
        run.collect()
        flaky.wait_for(3)
        log = NotificationLog(session.info["db"])
        deadline = time.monotonic() + 10
        while (rows := log.list(run.thread_id)) and rows[0].status != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert rows[0].attempts == 3 and rows[0].last_error is None
        assert len({body for _, body in flaky.got}) == 1, "every try sends the same signed body"
        log.close()
    finally:
        session.close()
        flaky.close()


def test_a_pause_made_through_the_sdk_pings_too(tmp_path: Path, receiver: Receiver) -> None:
    """And LangGraph Server, started later, delivers the ping a terminal's pause left in
    the outbox while the webhook was down."""
    home = tmp_path / "dev"
    workspace = home / "workspace"
    workspace.mkdir(parents=True)
    db = home / "gatehouse.db"
    receiver.fail_first = 10**6  # down
    settings = Settings(db=str(db), workspace=str(workspace), notify_webhook=receiver.url)
    session = open_session(replace(settings, notify_secret=SECRET))
    try:
        left = session.send(None, "write left.md: x")
        left.collect()
    finally:
        session.close()  # its last try fails: the ping stays in the outbox
    [row] = NotificationLog(str(db)).list(left.thread_id)
    assert row.status == "pending" and row.last_error == "HTTP 500"
    receiver.fail_first, since = 0, len(receiver.got)  # up again
    with langgraph_dev(
        home,
        db=db,
        workspace=workspace,
        GATEHOUSE_NOTIFY_WEBHOOK=receiver.url,
        GATEHOUSE_NOTIFY_SECRET=SECRET,
    ) as server:
        client = server.client()
        tid = client.threads.create()["thread_id"]
        client.runs.wait(
            tid, GRAPH, input={"messages": [{"role": "user", "content": "run: touch pinged.txt"}]}
        )
        receiver.wait_for_threads({tid, left.thread_id}, since)
        [ping] = [
            p
            for p in map(json.loads, (b for _, b in receiver.got[since:]))
            if p["thread_id"] == tid
        ]
        assert ping["calls"][0]["name"] == "run_command"
        assert ping["interrupt_id"] == client.threads.get_state(tid)["interrupts"][0]["id"]


@pytest.mark.postgres
def test_a_pause_on_postgres_pings_once_and_is_recorded(
    postgres_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    session = open_session(replace(_settings(tmp_path, receiver.url), db=postgres_url))
    try:
        run = session.send(None, "write pg.md: x")
        run.collect()
        [ping] = receiver.wait_for(1)
        assert ping["thread_id"] == run.thread_id
        log = NotificationLog(postgres_url)
        deadline = time.monotonic() + 10
        while (rows := log.list(run.thread_id)) and rows[0].status != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert len(rows) == 1 and rows[0].attempts == 1
        # Another process saving the same pause would not ping again: the claim is taken.
        assert not log.claim(run.thread_id, ping["interrupt_id"], receiver.url, ping)
        log.close()
    finally:
        session.close()


def test_a_raw_graph_on_the_same_saver_pings(tmp_path: Path, receiver: Receiver) -> None:
    from gatehouse.graph import ai, tool_call
    from gatehouse.graph.service.notify import attach_notifier
    from tests.support.core_fixtures import make_session

    session, _, _ = make_session(
        tmp_path, [ai("", tool_call("deploy", {"service": "api"}, "c1")), "ok"]
    )
    notifier = attach_notifier(session.storage.checkpointer, _settings(tmp_path, receiver.url))
    assert notifier is not None
    session.agent.invoke({"messages": [("user", "deploy")]}, {"configurable": {"thread_id": "raw"}})
    [ping] = receiver.wait_for(1)
    assert (
        ping["thread_id"] == "raw"
        and ping["calls"][0]["name"] == "deploy"
        and ping["risks"] == ["execute"]
    )


def _gatehouse(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "gatehouse"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]
    return subprocess.run(
        [*cmd, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_ping_outlives_the_process_that_made_it_and_shows_hidden_characters(
    tmp_path: Path,
) -> None:
    """`gatehouse send` pauses while the webhook is down and exits; the next Gatehouse
    process delivers the ping once the webhook is up. The model's bidi override and
    escape sequence arrive written out, as the card shows them."""
    hook = Receiver(fail_first=10**6)  # down: every try gets HTTP 500
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    db = tmp_path / "gatehouse.db"
    env = {
        **without_settings(),
        "GATEHOUSE_DB": str(db),
        "GATEHOUSE_WORKSPACE": str(workspace),
        "GATEHOUSE_CONFIG": str(tmp_path / "none.toml"),
        "GATEHOUSE_NOTIFY_WEBHOOK": hook.url,
        "GATEHOUSE_NOTIFY_SECRET": SECRET,
    }
    (tmp_path / "none.toml").write_text("")
    try:
        sent = _gatehouse(env, "send", "write a.md: pay \u202eredro\u202c \x1b[2Jnow", "--json")
        assert sent.returncode == 3, sent.stderr  # waiting for a decision
        thread_id = json.loads(sent.stdout)["thread_id"]
        log = NotificationLog(str(db))
        [row] = log.list(thread_id)
        assert row.status == "pending" and row.attempts >= 1 and row.last_error == "HTTP 500"
        tried = len(hook.got)
        hook.fail_first = 0  # the webhook is up again
        deadline = time.monotonic() + 60
        while (log.list(thread_id)[0].next_at or 0) > time.time():  # its retry is due
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # Any command that opens the database (here: listing the thread's grants).
        assert _gatehouse(env, "grants", thread_id, "--json").returncode == 0
        pings = hook.wait_for(tried + 1)
        [row] = log.list(thread_id)
        assert row.status == "delivered" and row.delivered_at
        ping = pings[-1]
        assert ping["thread_id"] == thread_id
        content = ping["calls"][0]["args"]["content"]
        assert content == "pay \\u202eredro\\u202c \\x1b[2Jnow\n"
        assert "\u202e" not in hook.got[-1][1].decode() and "\x1b" not in content
        log.close()
    finally:
        hook.close()
