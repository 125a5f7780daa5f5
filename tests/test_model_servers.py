"""What real model servers send, through the real `ChatOpenAI` client and the Session.

tests/support/openai_server.py plays each behaviour: a proxy that answers a streaming
request with one JSON body, a stream cut short, `<think>` blocks split across chunks,
`reasoning_content` deltas, HTTP errors, a refused connection, a connection that
breaks mid-reply, a slow first token. The session is the one `gatehouse` opens from
its settings (`open_session`), so config, model construction and events are all real.
Chat models that do not stream at all (`_generate` only, `disable_streaming=True`)
are covered at the end. tests/test_cli_model_servers.py runs the same cases through
the terminal client.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI

from gatehouse.graph import Session, build_graph
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.service.app import open_session
from gatehouse.graph.service.config import Settings
from gatehouse.graph.store import open_storage
from tests.support.core_fixtures import Ledger, make_tools
from tests.support.openai_server import FakeOpenAI, closed_port_url

pytestmark = pytest.mark.timeout(60)

WRITE = {"path": "notes.md", "content": "buy milk\n"}


def write_call(call_id: str = "call_w1", arguments: Any = None) -> dict[str, Any]:
    return {
        "id": call_id,
        "name": "write_file",
        "arguments": WRITE if arguments is None else arguments,
    }


@pytest.fixture
def session_at(tmp_path: Path) -> Iterator[Callable[..., Session]]:
    """`session_at(base_url, **settings)`: the Session `gatehouse` would open."""
    opened: list[Session] = []

    def make(base_url: str, **settings: Any) -> Session:
        settings.setdefault("model_max_retries", 0)
        settings.setdefault("db", str(tmp_path / "gh.db"))
        session = open_session(
            Settings(
                workspace=str(tmp_path / "ws"),
                base_url=base_url,
                api_key="test",
                model="gpt-test",
                **settings,
            )
        )
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()


def of(events: list[ev.Event], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def text(events: list[ev.Event]) -> str:
    return "".join(e.text for e in of(events, ev.TextDelta))


def thinking(events: list[ev.Event]) -> str:
    return "".join(e.text for e in of(events, ev.ReasoningDelta))


def finished(events: list[ev.Event]) -> ev.RunFinished:
    assert isinstance(events[-1], ev.RunFinished)
    return events[-1]


def assistant_turns(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "assistant"]


# -- a server that ignores `stream: true` -----------------------------------------------


def test_a_server_that_does_not_stream_is_asked_without_streaming_once_and_remembered(
    session_at: Callable[..., Session], caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        {"content": "Hello from behind a proxy.", "stream": False},
        {"content": "Still here.", "stream": False},
    ]
    with FakeOpenAI(script) as server, caplog.at_level(logging.WARNING, logger="gatehouse.model"):
        session = session_at(server.base_url)
        events = session.send(None, "hi").collect()
        again = session.send(events[0].thread_id, "and again").collect()

    assert finished(events).status == "completed"
    assert [e.text for e in of(events, ev.TextDelta)] == [
        "Hello from behind a proxy."
    ]  # one whole delta
    assert of(events, ev.ErrorEvent) == []
    assert [e.text for e in of(again, ev.TextDelta)] == ["Still here."]
    # Streamed once, found not to stream, then asked without streaming from then on.
    assert [r.get("stream", False) for r in server.requests] == [True, False, False]
    assert sum("without streaming" in r.getMessage() for r in caplog.records) == 1
    messages = session.view(events[0].thread_id).messages
    assert [m.content for m in messages if isinstance(m, AIMessage)] == [
        "Hello from behind a proxy.",
        "Still here.",
    ]
    assert of(events, ev.Usage)[0].total_tokens > 0


def test_a_non_streamed_tool_call_is_approved_once_and_runs_once(
    session_at: Callable[..., Session], tmp_path: Path
) -> None:
    script = [
        {"content": "Writing it.", "tool_calls": [write_call()], "stream": False},
        {"content": "Done: notes.md written.", "stream": False},
    ]
    with FakeOpenAI(script) as server:
        session = session_at(server.base_url)
        events = session.send(None, "write my notes").collect()
        thread_id = events[0].thread_id
        assert finished(events).status == "awaiting_approval"
        (approval,) = of(events, ev.ApprovalRequired)
        assert approval.request["action_requests"][0]["args"] == WRITE
        assert not (tmp_path / "ws" / "notes.md").exists()
        done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()

    assert finished(done).status == "completed"
    assert [(e.name, e.status) for e in of(done, ev.ToolFinished)] == [("write_file", "ok")]
    assert (tmp_path / "ws" / "notes.md").read_text() == "buy milk\n"
    assert text(done) == "Done: notes.md written."


# -- a reply cut off mid-stream ------------------------------------------------------------


def test_a_reply_cut_off_mid_text_stops_the_run_with_a_notice_and_retry_asks_again(
    session_at: Callable[..., Session],
) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:
            return {"content": "I wrote the file and everything is ready for you now.", "cut": True}
        return "Here is the whole answer."

    with FakeOpenAI([reply] * 5) as server:
        session = session_at(server.base_url)
        events = session.send(None, "write it").collect()
        thread_id = events[0].thread_id

        end = finished(events)
        assert end.status == "stopped"
        assert "cut off" in (end.reason or "") and "Retry" in (end.reason or "")
        assert text(events).startswith("I wrote the ") and not text(events).endswith("now.")
        assert [n.source for n in of(events, ev.Notice)][0] == ev.CUT_OFF_SOURCE
        info = session.view(thread_id).info
        assert info is not None and info.status == "stopped" and info.reason == end.reason
        cut = [m for m in session.view(thread_id).messages if isinstance(m, AIMessage)][0]
        assert cut.additional_kwargs.get("gatehouse_cut_off") is True
        assert json.loads(session.view(thread_id).export("json"))["messages"][1]["cut_off"] is True
        assert "cut off" in session.view(thread_id).export("md")

        retried = session.retry(thread_id).collect()

    assert finished(retried).status == "completed"
    assert text(retried) == "Here is the whole answer."
    assert len(server.requests) == 2
    info = session.view(thread_id).info
    assert info is not None and info.status == "completed" and info.reason is None


def test_a_tool_call_in_a_cut_off_reply_never_runs_and_is_answered(
    session_at: Callable[..., Session], tmp_path: Path
) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:  # role chunk + two of the three argument pieces, then nothing
            return {"tool_calls": [write_call()], "cut": 3}
        if len(calls) == 2:
            return {"tool_calls": [write_call("call_w2")]}
        return "Written."

    with FakeOpenAI([reply] * 5) as server:
        session = session_at(server.base_url)
        events = session.send(None, "write my notes").collect()
        thread_id = events[0].thread_id
        assert finished(events).status == "stopped"
        assert of(events, ev.ApprovalRequired) == []
        notice = of(events, ev.Notice)[0]
        assert notice.source == ev.CUT_OFF_SOURCE and "tool call was not run" in notice.text
        # A call that never ran is not shown as one (no `⚙ write_file {}`).
        assert of(events, ev.ToolStarted) == [] and of(events, ev.ToolFinished) == []
        tools = [m for m in session.view(thread_id).messages if isinstance(m, ToolMessage)]
        assert [(t.tool_call_id, t.status) for t in tools] == [("call_w1", "error")]
        assert "cut off" in str(tools[0].content)

        again = session.retry(thread_id).collect()
        assert finished(again).status == "awaiting_approval"
        # Asked again from the history before the cut reply: neither it, the error that
        # answered its call, nor Gatehouse's stop notice is sent as the model's words.
        assert server.requests[1]["messages"] == server.requests[0]["messages"]
        assert "Stopped" not in json.dumps(server.requests[1])
        assert not (tmp_path / "ws" / "notes.md").exists()
        done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()

    assert finished(done).status == "completed"
    assert [(e.call_id, e.status) for e in of(done, ev.ToolFinished)] == [("call_w2", "ok")]
    assert (tmp_path / "ws" / "notes.md").read_text() == "buy milk\n"


# -- reasoning ---------------------------------------------------------------------------


THOUGHT = "The user wants a note.\nI should call write_file."


@pytest.mark.parametrize("keep", [False, True], ids=["dropped", "kept"])
def test_think_blocks_split_across_chunks_are_kept_apart_from_the_answer(
    session_at: Callable[..., Session], keep: bool
) -> None:
    script = [
        # Three-character chunks split both tags ("<th" "ink>", "</t" "hin" "k>").
        {
            "content": f"<think>{THOUGHT}</think>\n\nWriting your note.",
            "chunk_chars": 3,
            "tool_calls": [write_call()],
        },
        {"content": "<think>It worked.</think>All done.", "chunk_chars": 3},
    ]
    with FakeOpenAI(script) as server:
        session = session_at(server.base_url, keep_reasoning=keep)
        events = session.send(None, "note: buy milk").collect()
        thread_id = events[0].thread_id
        assert thinking(events) == THOUGHT
        assert text(events) == "Writing your note."
        done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()

    assert thinking(done) == "It worked." and text(done) == "All done."
    first, last = [m for m in session.view(thread_id).messages if isinstance(m, AIMessage)]
    assert (first.content, first.additional_kwargs["reasoning_content"]) == (
        "Writing your note.",
        THOUGHT,
    )
    assert (last.content, last.additional_kwargs["reasoning_content"]) == (
        "All done.",
        "It worked.",
    )
    sent_back = assistant_turns(server.requests[1])[0]["content"]
    if keep:
        assert sent_back == f"<think>\n{THOUGHT}\n</think>\n\nWriting your note."
    else:
        assert sent_back == "Writing your note."
    exported = json.loads(session.view(thread_id).export("json"))["messages"]
    assert [(m["content"], m.get("reasoning")) for m in exported if m["role"] == "assistant"] == [
        ("Writing your note.", THOUGHT),
        ("All done.", "It worked."),
    ]
    info = session.view(thread_id).info
    assert info is not None and "think" not in info.title.lower()


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "json-body"])
def test_reasoning_deltas_are_streamed_stored_and_not_sent_back(
    session_at: Callable[..., Session], field: str, streamed: bool
) -> None:
    script: list[Any] = [
        {
            "reasoning": "Let me count the files first.",
            "reasoning_field": field,
            "content": "You have none.",
            **({} if streamed else {"stream": False}),
        },
        "Anything else?",
    ]
    with FakeOpenAI(script) as server:
        session = session_at(server.base_url)
        events = session.send(None, "how many files?").collect()
        thread_id = events[0].thread_id
        session.send(thread_id, "thanks").collect()

    assert thinking(events) == "Let me count the files first."
    assert text(events) == "You have none."
    ai = [m for m in session.view(thread_id).messages if isinstance(m, AIMessage)][0]
    assert ai.content == "You have none."
    assert ai.additional_kwargs["reasoning_content"] == "Let me count the files first."
    previous = assistant_turns(server.requests[-1])[0]
    assert previous["content"] == "You have none." and "reasoning_content" not in previous
    assert "Let me count" not in json.dumps(server.requests[-1])


# -- model API errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "refused the credentials"), (429, "rate limiting"), (500, "model server failed")],
)
def test_an_api_error_is_a_model_error_with_its_status_and_the_servers_words(
    session_at: Callable[..., Session], status: int, words: str
) -> None:
    with FakeOpenAI([{"status": status, "content": "the server's own explanation"}]) as server:
        session = session_at(server.base_url)
        events = session.send(None, "hi").collect()
    thread_id = events[0].thread_id

    (error,) = of(events, ev.ErrorEvent)
    assert error.kind == "model" and error.retryable
    assert words in error.message
    assert f"HTTP {status}" in error.message and "the server's own explanation" in error.message
    assert finished(events).status == "failed"
    info = session.view(thread_id).info
    assert info is not None and info.status == "failed" and info.reason == error.message


@pytest.mark.postgres
def test_why_a_run_failed_is_kept_on_postgres_too(
    session_at: Callable[..., Session], postgres_url: str
) -> None:
    with FakeOpenAI([{"status": 401, "content": "Invalid API key"}]) as server:
        session = session_at(server.base_url, db=postgres_url)
        events = session.send(None, "hi").collect()
    info = session.view(events[0].thread_id).info
    assert info is not None and info.status == "failed"
    assert info.reason is not None and "HTTP 401: Invalid API key" in info.reason


def test_a_thread_index_from_before_reasons_were_kept_gains_the_column(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE gatehouse_threads (thread_id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', "
            "status TEXT NOT NULL DEFAULT 'idle', owner TEXT, created_at REAL NOT NULL, "
            "updated_at REAL NOT NULL, pending_since REAL)"
        )
        conn.execute(
            "INSERT INTO gatehouse_threads VALUES ('old', 'An old thread', 'failed', NULL, 1, 1, NULL)"
        )
    storage = open_storage(str(db))
    try:
        before = storage.index.get("old")
        assert before is not None and (before.title, before.status, before.reason) == (
            "An old thread",
            "failed",
            None,
        )
        storage.index.touch("old", status="failed", reason="The model server failed (HTTP 500).")
        after = storage.index.get("old")
        assert after is not None and after.reason == "The model server failed (HTTP 500)."
        storage.index.touch("old", status="running")  # a new run forgets the old reason
        running = storage.index.get("old")
        assert running is not None and running.reason is None
    finally:
        storage.close()


def test_a_refused_connection_names_the_server_and_the_cause(
    session_at: Callable[..., Session],
) -> None:
    url = closed_port_url()
    session = session_at(url)
    events = session.send(None, "hi").collect()

    (error,) = of(events, ev.ErrorEvent)
    assert error.kind == "model" and error.retryable
    assert "Could not reach the model server" in error.message
    assert url in error.message and "refused" in error.message.lower()


# -- retries and timeouts ----------------------------------------------------------------


def test_a_rate_limited_call_is_retried_with_an_event(session_at: Callable[..., Session]) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:
            return {"status": 429, "content": "slow down", "headers": {"Retry-After": "0"}}
        return "Answered on the second try."

    with FakeOpenAI([reply]) as server:
        session = session_at(server.base_url, model_max_retries=2)
        events = session.send(None, "hi").collect()

    (retry,) = of(events, ev.ModelRetried)
    assert (retry.attempt, retry.max_retries, retry.delay_s) == (1, 2, 0.0)
    assert "HTTP 429" in retry.reason and "slow down" in retry.reason
    assert finished(events).status == "completed" and text(events) == "Answered on the second try."
    assert len(server.requests) == 2


def test_a_stream_that_breaks_mid_reply_is_retried_and_the_partial_text_dropped(
    session_at: Callable[..., Session],
) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:
            return {"content": "A first attempt that breaks off halfway through.", "drop": True}
        return "The second attempt, whole."

    with FakeOpenAI([reply]) as server:
        session = session_at(server.base_url, model_max_retries=1)
        events = session.send(None, "hi").collect()
    thread_id = events[0].thread_id

    (retry,) = of(events, ev.ModelRetried)
    broken = [e for e in of(events, ev.TextDelta) if e.message_id == retry.message_id]
    assert broken and "".join(e.text for e in broken).startswith("A first attempt")
    assert "broke in the middle of the reply" in retry.reason
    assert finished(events).status == "completed"
    assert [m.content for m in session.view(thread_id).messages if isinstance(m, AIMessage)] == [
        "The second attempt, whole."
    ]
    assert len(server.requests) == 2


def test_retries_run_out_and_the_run_fails_with_the_cause(
    session_at: Callable[..., Session],
) -> None:
    with FakeOpenAI(
        [{"status": 503, "content": "overloaded", "headers": {"Retry-After": "0"}}]
    ) as server:
        session = session_at(server.base_url, model_max_retries=2)
        events = session.send(None, "hi").collect()

    assert [e.attempt for e in of(events, ev.ModelRetried)] == [1, 2]
    (error,) = of(events, ev.ErrorEvent)
    assert error.kind == "model" and "HTTP 503: overloaded" in error.message
    assert len(server.requests) == 3


def test_a_slow_first_token_past_the_timeout_fails_clearly_and_within_it_works(
    session_at: Callable[..., Session],
) -> None:
    with FakeOpenAI([{"content": "Eventually.", "delay": 3}]) as server:
        events = session_at(server.base_url, model_timeout=0.5).send(None, "hi").collect()
    (error,) = of(events, ev.ErrorEvent)
    assert error.kind == "model" and "did not answer in time" in error.message

    with FakeOpenAI([{"content": "Eventually.", "delay": 0.3}]) as server:
        events = session_at(server.base_url, model_timeout=5).send(None, "hi").collect()
    assert finished(events).status == "completed" and text(events) == "Eventually."


# -- chat models that do not stream ------------------------------------------------------


class GenerateOnly(BaseChatModel):
    """A chat model that implements only `_generate` (`stream()` yields one AIMessage)."""

    replies: list[AIMessage]

    @property
    def _llm_type(self) -> str:
        return "generate-only"

    def bind_tools(self, tools: Any, **kwargs: Any) -> GenerateOnly:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        reply = self.replies[turn] if turn < len(self.replies) else AIMessage("Done.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def ledger_session(tmp_path: Path, model: BaseChatModel) -> tuple[Session, Ledger]:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    tools = make_tools(ledger)
    storage = open_storage(str(tmp_path / "gh.db"))
    graph = build_graph(
        model=model, tools=tools, checkpointer=storage.checkpointer, journal=storage.journal
    )
    return Session(graph, storage, tools), ledger


def test_a_generate_only_model_works_with_one_approval_and_one_execution(tmp_path: Path) -> None:
    call = {"name": "send_email", "args": {"to": "ann@example.com", "body": "hi"}, "id": "call_e1"}
    model = GenerateOnly(replies=[AIMessage("Sending it.", tool_calls=[call]), AIMessage("Sent.")])
    session, ledger = ledger_session(tmp_path, model)
    try:
        events = session.send(None, "email ann").collect()
        thread_id = events[0].thread_id
        assert [e.text for e in of(events, ev.TextDelta)] == ["Sending it."]
        assert (
            finished(events).status == "awaiting_approval"
            and len(of(events, ev.ApprovalRequired)) == 1
        )
        done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()
    finally:
        session.close()
    assert finished(done).status == "completed" and text(done) == "Sent."
    assert ledger.count("send_email") == 1


def test_a_generate_only_models_raw_arguments_are_still_checked_strictly(tmp_path: Path) -> None:
    # The model's own lenient parser made a call of arguments the model never finished.
    raw = [
        {
            "id": "call_e1",
            "type": "function",
            "function": {"name": "send_email", "arguments": '{"to": "ann@example.com", "bo'},
        }
    ]
    lenient = AIMessage(
        "",
        tool_calls=[{"name": "send_email", "args": {"to": "ann@example.com"}, "id": "call_e1"}],
        additional_kwargs={"tool_calls": raw},
    )
    session, ledger = ledger_session(tmp_path, GenerateOnly(replies=[lenient, AIMessage("Sorry.")]))
    try:
        events = session.send(None, "email ann").collect()
        messages = session.view(events[0].thread_id).messages
    finally:
        session.close()
    # Arguments that stop mid-object are a cut-off reply, whatever the model said of it.
    assert of(events, ev.ApprovalRequired) == [] and finished(events).status == "stopped"
    assert [n.source for n in of(events, ev.Notice)][0] == ev.CUT_OFF_SOURCE
    (tool,) = [m for m in messages if isinstance(m, ToolMessage)]
    assert tool.tool_call_id == "call_e1" and "cut off" in str(tool.content)
    assert ledger.count("send_email") == 0


def test_chat_openai_with_streaming_disabled_approves_and_runs_a_call_once(tmp_path: Path) -> None:
    args = {"to": "ann@example.com", "body": "hello"}
    script = [
        {
            "content": "Sending.",
            "tool_calls": [{"id": "call_e1", "name": "send_email", "arguments": args}],
        },
        "Sent it.",
    ]
    with FakeOpenAI(script) as server:
        model = ChatOpenAI(
            model="gpt-test",
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            disable_streaming=True,
        )
        session, ledger = ledger_session(tmp_path, model)
        try:
            events = session.send(None, "email ann").collect()
            thread_id = events[0].thread_id
            (approval,) = of(events, ev.ApprovalRequired)
            assert approval.request["action_requests"][0]["args"] == args
            assert [e.text for e in of(events, ev.TextDelta)] == ["Sending."]
            done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()
        finally:
            session.close()

    assert finished(done).status == "completed" and text(done) == "Sent it."
    assert ledger.entries() == [{"name": "send_email", "args": args}]
    assert [r.get("stream", False) for r in server.requests] == [False, False]
