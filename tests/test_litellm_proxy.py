"""Gatehouse behind a real LiteLLM proxy (tests/support/litellm.py), in front of the
local OpenAI-wire server: the real `ChatOpenAI` client, the Session `gatehouse` opens.

LiteLLM hides what a direct connection shows: it ends a stream that broke with its
own `finish_reason: "stop"`, usage chunk and `[DONE]`, answers a streaming request
with an empty stream when the server behind it does not stream, reports a stream
that broke midway as an error event inside the stream, and retries errors itself.
One proxy (and one upstream server, whose script each test sets) for the module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from gatehouse.graph import Session
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.service.app import open_session
from gatehouse.graph.service.config import Settings
from tests.support.litellm import NUM_RETRIES, Proxy, litellm_proxy
from tests.support.openai_server import FakeOpenAI

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

WRITE = {"path": "notes.md", "content": "buy milk\n"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(upstream: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with litellm_proxy(tmp_path_factory.mktemp("litellm"), upstream.base_url) as p:
        yield p


@pytest.fixture
def session_via(
    proxy: Proxy, upstream: FakeOpenAI, tmp_path: Path
) -> Iterator[Callable[..., Session]]:
    """`session_via(script, **settings)`: a Session whose model is behind the proxy."""
    opened: list[Session] = []

    def make(script: list[Any], **settings: Any) -> Session:
        upstream.script = list(script)
        upstream.requests.clear()
        settings.setdefault("model_max_retries", 0)
        settings.setdefault("model", "gpt-test")
        session = open_session(
            Settings(
                db=str(tmp_path / "gh.db"),
                workspace=str(tmp_path / "ws"),
                base_url=proxy.base_url,
                api_key="sk-test",
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


def finished(events: list[ev.Event]) -> ev.RunFinished:
    assert isinstance(events[-1], ev.RunFinished)
    return events[-1]


def cut_notices(events: list[ev.Event]) -> list[ev.Notice]:
    return [n for n in of(events, ev.Notice) if n.source == ev.CUT_OFF_SOURCE]


def ais(session: Session, thread_id: str) -> list[AIMessage]:
    return [m for m in session.view(thread_id).messages if isinstance(m, AIMessage)]


def test_a_reply_stopped_by_max_tokens_is_marked_cut_and_retry_asks_from_before_it(
    session_via: Callable[..., Session], upstream: FakeOpenAI
) -> None:
    replies = iter([{"content": "Done: I wrote the", "finish": "length"}, "Here is all of it."])
    session = session_via([lambda request: next(replies)])
    events = session.send(None, "write it").collect()
    thread_id = events[0].thread_id

    assert finished(events).status == "stopped"
    (notice,) = cut_notices(events)
    assert "max_tokens" in notice.text
    assert text(events) == "Done: I wrote the"
    cut = ais(session, thread_id)[0]
    assert cut.content == "Done: I wrote the" and cut.additional_kwargs["gatehouse_cut_off"] is True
    # Marked in the history a person reads (the notice after it is Gatehouse's, not the model's).
    assert [
        (v.cut_off, v.notice) for v in session.view(thread_id).transcript if v.role == "assistant"
    ] == [(True, False), (False, True)]

    retried = session.retry(thread_id).collect()
    assert finished(retried).status == "completed" and text(retried) == "Here is all of it."
    # The model is asked from the state before the cut reply: not its words, not the notice.
    first, second = upstream.requests
    assert second["messages"] == first["messages"]


def test_a_tool_call_cut_mid_arguments_is_caught_although_litellm_says_stop(
    session_via: Callable[..., Session], tmp_path: Path
) -> None:
    call = {"id": "call_w1", "name": "write_file", "arguments": WRITE}
    session = session_via([{"tool_calls": [call], "cut": 3}])
    events = session.send(None, "write my notes").collect()

    assert finished(events).status == "stopped"
    assert of(events, ev.ApprovalRequired) == [] and of(events, ev.ToolStarted) == []
    (notice,) = cut_notices(events)
    assert "tool call was not run" in notice.text
    assert not (tmp_path / "ws" / "notes.md").exists()


def test_a_stream_cut_inside_a_think_block_is_caught_although_litellm_says_stop(
    session_via: Callable[..., Session],
) -> None:
    session = session_via(
        [{"content": "<think>The user wants a note. I will call write_file with", "cut": 8}]
    )
    events = session.send(None, "write my notes").collect()

    assert finished(events).status == "stopped"
    assert len(cut_notices(events)) == 1
    assert text(events) == ""


def test_a_server_that_does_not_stream_behind_litellm_is_asked_again_without_streaming(
    session_via: Callable[..., Session], upstream: FakeOpenAI, tmp_path: Path
) -> None:
    call = {"id": "call_w1", "name": "write_file", "arguments": WRITE}
    session = session_via(
        [
            {"content": "Writing it.", "tool_calls": [call], "stream": False},
            {"content": "Written.", "stream": False},
        ]
    )
    events = session.send(None, "write my notes").collect()
    thread_id = events[0].thread_id

    # LiteLLM turned the JSON body into an empty stream; asked again without streaming,
    # the reply and its call arrive, and nothing ran without approval.
    assert finished(events).status == "awaiting_approval"
    (approval,) = of(events, ev.ApprovalRequired)
    assert approval.request["action_requests"][0]["args"] == WRITE
    assert [r.get("stream", False) for r in upstream.requests] == [True, False]
    done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()
    assert finished(done).status == "completed" and text(done) == "Written."
    assert (tmp_path / "ws" / "notes.md").read_text() == "buy milk\n"
    assert [r.get("stream", False) for r in upstream.requests][2:] == [False]  # remembered


def test_litellm_mock_tool_calls_are_not_lost(
    session_via: Callable[..., Session], upstream: FakeOpenAI
) -> None:
    session = session_via([], model="mock-tools")
    events = session.send(None, "write it").collect()

    assert finished(events).status == "awaiting_approval"
    (approval,) = of(events, ev.ApprovalRequired)
    assert approval.request["action_requests"][0]["name"] == "write_file"
    assert approval.request["action_requests"][0]["args"]["path"] == "mock.md"
    assert upstream.requests == []  # LiteLLM's own mock answered


def test_an_empty_reply_is_reported_never_a_silent_success(
    session_via: Callable[..., Session], upstream: FakeOpenAI
) -> None:
    session = session_via([{"content": ""}])
    events = session.send(None, "hello?").collect()
    thread_id = events[0].thread_id

    end = finished(events)
    assert end.status == "failed"
    (error,) = of(events, ev.ErrorEvent)
    assert error.kind == "model" and "empty reply" in error.message and error.retryable
    assert [r.get("stream", False) for r in upstream.requests] == [
        True,
        False,
    ]  # asked once more, not streamed
    info = session.view(thread_id).info
    assert info is not None and info.status == "failed"


def test_a_stream_that_breaks_midway_behind_litellm_is_retried(
    session_via: Callable[..., Session], upstream: FakeOpenAI
) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:  # LiteLLM forwards the first pieces, then the stream breaks
            return {
                "content": "I will write the whole thing out for you now, piece by piece.",
                "drop": 8,
                "pace": 0.05,
            }
        return "Here it is, whole."

    session = session_via([reply], model_max_retries=1)
    events = session.send(None, "write it").collect()

    assert finished(events).status == "completed"
    (retry,) = of(events, ev.ModelRetried)
    assert "broke" in retry.reason
    assert text(events).endswith("Here it is, whole.")
    assert [m.content for m in ais(session, events[0].thread_id)] == ["Here it is, whole."]


def test_a_persistent_error_is_not_retried_on_top_of_litellms_own_retries(
    session_via: Callable[..., Session], upstream: FakeOpenAI
) -> None:
    session = session_via([{"status": 500, "content": "upstream is down"}], model_max_retries=2)
    started = time.monotonic()
    events = session.send(None, "hello?").collect()
    took = time.monotonic() - started

    assert finished(events).status == "failed"
    assert of(events, ev.ModelRetried) == []
    (error,) = of(events, ev.ErrorEvent)
    assert "HTTP 500" in error.message and "LiteLLM" in error.message
    assert len(upstream.requests) == 1 + NUM_RETRIES  # LiteLLM's tries only, not 3 x 3
    assert took < 30
