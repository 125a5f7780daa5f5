"""Replies that are not what they seem, directly from the local OpenAI-wire server
through the real `ChatOpenAI` client and the Session `gatehouse` opens (the same
cases behind a real LiteLLM proxy: tests/test_litellm_proxy.py).

- stopped by max_tokens (`finish_reason: "length"`), or ended without the usage chunk
  that was asked for: marked cut off, never a finished answer;
- an empty reply: asked again once without streaming, then reported;
- an error event inside the stream (LiteLLM's way): retried like a broken stream;
- what is sent back: never Gatehouse's notices or a cut reply, never reasoning
  blocks unless `keep_reasoning`; Responses-style reasoning summaries are shown
  (through the real client against the server's `/v1/responses`);
- errors: `llm_provider-retry-after`, a LiteLLM error response not retried again,
  a context-window 400 that says to compact, Ollama's own 404 words;
- provider-prefixed model names through `init_chat_model`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from gatehouse.graph import Session, build_graph
from gatehouse.graph.agent.deps import ModelOptions
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import ConfigError
from gatehouse.graph.protocol.threads import MessageView, view_of_fields
from gatehouse.graph.service.app import open_session
from gatehouse.graph.service.config import Settings, load_settings
from gatehouse.graph.service.models import describe_model, make_model
from tests.support.openai_server import FakeOpenAI

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def session_at(tmp_path: Path) -> Iterator[Callable[..., Session]]:
    opened: list[Session] = []

    def make(base_url: str, **settings: Any) -> Session:
        settings.setdefault("model_max_retries", 0)
        settings.setdefault("model", "gpt-test")
        session = open_session(
            Settings(
                db=str(tmp_path / "gh.db"),
                workspace=str(tmp_path / "ws"),
                base_url=base_url,
                api_key="test",
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


def status(events: list[ev.Event]) -> str:
    assert isinstance(events[-1], ev.RunFinished)
    return events[-1].status


def cut_notice(events: list[ev.Event]) -> str:
    (notice,) = [n for n in of(events, ev.Notice) if n.source == ev.CUT_OFF_SOURCE]
    return notice.text


def transcript_view(message: BaseMessage) -> MessageView:
    return view_of_fields({"type": message.type, **message.model_dump()})


def in_order(*replies: Any) -> Callable[[dict[str, Any]], Any]:
    """Replies by request, whatever the turn (a retry resends the same turn)."""
    it = iter(replies)
    return lambda request: next(it)


# -- cut off ------------------------------------------------------------------------------


def test_a_reply_stopped_by_max_tokens_is_marked_cut_and_retry_asks_from_before_it(
    session_at: Callable[..., Session],
) -> None:
    with FakeOpenAI(
        [in_order({"content": "Done: I wrote the", "finish": "length"}, "All of it.")]
    ) as server:
        session = session_at(server.base_url)
        events = session.send(None, "write it").collect()
        thread_id = events[0].thread_id
        assert status(events) == "stopped" and "max_tokens" in cut_notice(events)
        assert [
            (v.content, v.cut_off)
            for v in session.view(thread_id).transcript
            if v.role == "assistant"
        ][0] == ("Done: I wrote the", True)
        retried = session.retry(thread_id).collect()

    assert status(retried) == "completed" and text(retried) == "All of it."
    first, second = server.requests
    assert second["messages"] == first["messages"]


def test_a_stream_without_the_usage_chunk_it_asked_for_is_marked_cut(
    session_at: Callable[..., Session],
) -> None:
    with FakeOpenAI([{"content": "Done: I wrote the", "usage_chunk": False}]) as server:
        events = session_at(server.base_url).send(None, "write it").collect()
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert status(events) == "stopped" and "usage" in cut_notice(events)


def test_with_stream_usage_off_no_usage_chunk_is_asked_for_or_missed(
    session_at: Callable[..., Session], tmp_path: Path
) -> None:
    toml = tmp_path / "gatehouse.toml"
    toml.write_text("[model]\nstream_usage = false\n")
    assert load_settings(toml, env={}).model_stream_usage is False
    with FakeOpenAI(["A whole answer."]) as server:
        events = session_at(server.base_url, model_stream_usage=False).send(None, "hi").collect()
    assert "stream_options" not in server.requests[0]
    assert status(events) == "completed" and text(events) == "A whole answer."


def test_a_new_message_after_a_cut_reply_sends_neither_it_nor_the_notice(
    session_at: Callable[..., Session],
) -> None:
    with FakeOpenAI([in_order({"content": "I wrote the", "cut": 3}, "Fine.")]) as server:
        session = session_at(server.base_url)
        events = session.send(None, "write it").collect()
        assert status(events) == "stopped"
        session.send(events[0].thread_id, "never mind").collect()

    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == ["user", "user"]
    assert "Stopped" not in json.dumps(sent) and "I wrote" not in json.dumps(sent)


# -- empty replies --------------------------------------------------------------------------


def test_an_empty_stream_is_asked_again_without_streaming(
    session_at: Callable[..., Session],
) -> None:
    def reply(request: dict[str, Any]) -> Any:
        return {"content": ""} if request.get("stream") else "Here, unstreamed."

    with FakeOpenAI([reply, reply]) as server:
        session = session_at(server.base_url)
        events = session.send(None, "hi").collect()
        again = session.send(events[0].thread_id, "again").collect()

    assert status(events) == "completed" and text(events) == "Here, unstreamed."
    (retry,) = of(events, ev.ModelRetried)
    assert "empty" in retry.reason
    assert text(again) == "Here, unstreamed." and of(again, ev.ModelRetried) == []
    assert [r.get("stream", False) for r in server.requests] == [True, False, False]


def test_an_empty_reply_fails_the_run_with_the_reason(session_at: Callable[..., Session]) -> None:
    with FakeOpenAI([{"content": ""}]) as server:
        session = session_at(server.base_url)
        events = session.send(None, "hi").collect()
        info = session.view(events[0].thread_id).info

    assert status(events) == "failed"
    (error,) = of(events, ev.ErrorEvent)
    assert error.kind == "model" and "empty reply" in error.message
    assert info is not None and info.status == "failed" and "empty" in (info.reason or "")
    assert len(server.requests) == 2


# -- broken streams and errors ---------------------------------------------------------------


def test_an_error_event_inside_the_stream_is_retried(session_at: Callable[..., Session]) -> None:
    with FakeOpenAI(
        [in_order({"content": "I will write it all out now.", "error_event": 4}, "Whole.")]
    ) as server:
        events = session_at(server.base_url, model_max_retries=1).send(None, "go").collect()

    assert status(events) == "completed" and text(events).endswith("Whole.")
    (retry,) = of(events, ev.ModelRetried)
    assert (
        "broke off in the middle of the stream" in retry.reason
        and "upstream stream broke" in retry.reason
    )
    assert len(server.requests) == 2


def test_the_providers_retry_after_passed_on_by_a_proxy_is_honoured(
    session_at: Callable[..., Session],
) -> None:
    busy = {"status": 429, "content": "slow down", "headers": {"llm_provider-retry-after": "0.3"}}
    with FakeOpenAI([in_order(busy, "Now.")]) as server:
        events = session_at(server.base_url, model_max_retries=1).send(None, "go").collect()
    (retry,) = of(events, ev.ModelRetried)
    assert retry.delay_s == pytest.approx(0.3)
    assert status(events) == "completed" and len(server.requests) == 2


def test_an_error_response_from_litellm_is_not_retried_again(
    session_at: Callable[..., Session],
) -> None:
    down = {
        "status": 500,
        "content": "upstream down",
        "headers": {"x-litellm-version": "1.0", "x-litellm-call-id": "c"},
    }
    with FakeOpenAI([down]) as server:
        events = session_at(server.base_url, model_max_retries=2).send(None, "go").collect()
    assert status(events) == "failed" and of(events, ev.ModelRetried) == []
    assert len(server.requests) == 1 and "LiteLLM" in of(events, ev.ErrorEvent)[0].message


def test_a_context_window_refusal_says_to_compact(session_at: Callable[..., Session]) -> None:
    too_long = {
        "status": 400,
        "content": "This model's maximum context length is 8192 tokens. However, your "
        "messages resulted in 9000 tokens.",
    }
    with FakeOpenAI([too_long]) as server:
        events = session_at(server.base_url).send(None, "go").collect()
    (error,) = of(events, ev.ErrorEvent)
    assert (
        "maximum context length" in error.message and "compact" in error.message and error.retryable
    )


def test_ollamas_own_404_words_are_kept(session_at: Callable[..., Session]) -> None:
    # What Ollama's OpenAI-compatible endpoint answers for a model it does not have.
    missing = {"status": 404, "content": 'model "qwen3" not found, try pulling it first'}
    with FakeOpenAI([missing]) as server:
        events = session_at(server.base_url).send(None, "go").collect()
    (error,) = of(events, ev.ErrorEvent)
    assert "try pulling it first" in error.message and error.message.count("pull") == 1


# -- reasoning blocks ----------------------------------------------------------------------------


class BlockModel(BaseChatModel):
    """Replies with reasoning as content blocks, and records what it was sent."""

    replies: list[AIMessage]
    seen: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "block-model"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.replies[len(self.seen) - 1])])


BLOCKS = {
    "anthropic": [
        {"type": "thinking", "thinking": "Greet them.", "signature": "sig"},
        {"type": "text", "text": "Hi."},
    ],
    "responses": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Greet them."}],
        },
        {"type": "text", "text": "Hi."},
    ],
    "v1": [{"type": "reasoning", "reasoning": "Greet them."}, {"type": "text", "text": "Hi."}],
}


@pytest.mark.parametrize("keep", [False, True], ids=["dropped", "kept"])
@pytest.mark.parametrize("kind", sorted(BLOCKS))
def test_reasoning_blocks_are_shown_and_only_sent_back_with_keep_reasoning(
    kind: str, keep: bool
) -> None:
    model = BlockModel(replies=[AIMessage(BLOCKS[kind]), AIMessage("Bye.")], seen=[])
    graph = build_graph(
        model=model,
        tools=[],
        checkpointer=InMemorySaver(),
        model_options=ModelOptions(keep_reasoning=keep),
    )
    config = {"configurable": {"thread_id": "t"}}
    streamed = list(graph.stream({"messages": [("user", "hello")]}, config, stream_mode="custom"))
    graph.invoke({"messages": [("user", "bye")]}, config)

    shown = "".join(e.text for e in streamed if isinstance(e, ev.ReasoningDelta))
    assert shown == "Greet them."  # the person sees the reasoning (a Responses summary too)
    earlier = [m for m in model.seen[1] if isinstance(m, AIMessage)][0]
    types = (
        [b.get("type") for b in earlier.content] if isinstance(earlier.content, list) else ["str"]
    )
    assert ("text" in types or types == ["str"]) and ((len(types) == 2) is keep)
    assert ("Greet them." in json.dumps(earlier.content)) is keep


# -- provider-prefixed model names -------------------------------------------------------------


def test_an_openai_prefixed_name_talks_to_the_configured_server(
    session_at: Callable[..., Session],
) -> None:
    with FakeOpenAI(["Hello."]) as server:
        events = session_at(server.base_url, model="openai:gpt-test").send(None, "hi").collect()
    assert status(events) == "completed" and text(events) == "Hello."
    assert server.requests[0]["model"] == "gpt-test"


@pytest.mark.parametrize(
    ("name", "package"),
    [("anthropic:claude-sonnet-4-5", "langchain-anthropic"), ("ollama:qwen3", "langchain-ollama")],
)
def test_a_provider_whose_package_is_missing_is_named_from_gatehouse_toml(
    tmp_path: Path, name: str, package: str
) -> None:
    toml = tmp_path / "gatehouse.toml"
    toml.write_text(f'db = "gh.db"\nworkspace = "ws"\n[model]\nname = "{name}"\n')
    settings = load_settings(toml, env={})
    assert not settings.uses_demo_model  # a provider was named: not the offline demo
    with pytest.raises(ConfigError, match=package):
        open_session(settings)


def test_an_ollama_tag_is_not_a_provider_prefix() -> None:
    settings = Settings(model="qwen3:8b", base_url="http://127.0.0.1:11434/v1")
    assert type(make_model(settings)).__name__ == "ChatOpenAICompatible"
    assert describe_model(settings) == "qwen3:8b via http://127.0.0.1:11434/v1"


@pytest.mark.parametrize("keep", [False, True], ids=["dropped", "kept"])
def test_responses_api_reasoning_summaries_are_shown_and_not_sent_back(
    tmp_path: Path, keep: bool
) -> None:
    summary = "The user greets me; greet back briefly."
    with FakeOpenAI([{"content": "Hi there.", "reasoning": summary}, "Bye."]) as server:
        model = ChatOpenAI(
            model="gpt-test",
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            use_responses_api=True,
        )
        graph = build_graph(
            model=model,
            tools=[],
            checkpointer=InMemorySaver(),
            model_options=ModelOptions(keep_reasoning=keep),
        )
        config = {"configurable": {"thread_id": "t"}}
        streamed = list(
            graph.stream({"messages": [("user", "hello")]}, config, stream_mode="custom")
        )
        graph.invoke({"messages": [("user", "bye")]}, config)

    assert "".join(e.text for e in streamed if isinstance(e, ev.ReasoningDelta)) == summary
    assert "".join(e.text for e in streamed if isinstance(e, ev.TextDelta)) == "Hi there."
    reply = graph.get_state(config).values["messages"][1]
    assert (
        transcript_view(reply).reasoning == summary
        and transcript_view(reply).content == "Hi there."
    )
    sent_back = json.dumps(server.requests[1]["input"])
    assert (summary in sent_back) is keep and "Hi there." in sent_back
