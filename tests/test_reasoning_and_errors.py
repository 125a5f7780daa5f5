"""The two pure parts of model handling, on their own:

- `<think>` splitting gives the same answer and reasoning however the stream cuts the
  text into chunks (a tag split anywhere, one character per chunk included);
- a model API failure is described from the exception the run really sees: the class
  langchain-openai re-raises, with the status, the server's message and the root cause
  found in its chain.
"""

from __future__ import annotations

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_openai.chat_models.base import (
    OpenAIAPIError,
    OpenAIAuthenticationError,
    OpenAIConnectionError,
    OpenAIInvalidRequestError,
    OpenAIRateLimitError,
    OpenAITimeoutError,
)

from gatehouse.graph import describe_error
from gatehouse.graph.agent.model_errors import describe_model_error, model_problem
from gatehouse.graph.agent.reasoning import ThinkSplitter, split_think

URL = "http://127.0.0.1:8000/v1/chat/completions"


def stream(text: str, cuts: list[int]) -> tuple[str, str]:
    """Feed `text` to a splitter in pieces cut at `cuts`; (answer, reasoning) streamed."""
    splitter = ThinkSplitter()
    bounds = [0, *sorted(set(c % (len(text) + 1) for c in cuts)), len(text)]
    pieces = [p for a, b in zip(bounds, bounds[1:], strict=False) for p in splitter.feed(text[a:b])]
    pieces += splitter.flush()
    return "".join(t for k, t in pieces if k == "text"), "".join(
        t for k, t in pieces if k == "reasoning"
    )


REPLIES = [
    ("<think>plan: call a tool</think>\n\nHere it is.", "Here it is.", "plan: call a tool"),
    ("Before <think>a</think>middle<think>b</think> after", "Before middle after", "ab"),
    (
        "No thinking at all, just < and > and </thin.",
        "No thinking at all, just < and > and </thin.",
        "",
    ),
    ("<think>cut off while thinking", "", "cut off while thinking"),
]


@pytest.mark.parametrize(("reply", "answer", "reasoning"), REPLIES)
@given(cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_think_tags_split_anywhere_give_the_same_answer(
    reply: str, answer: str, reasoning: str, cuts: list[int]
) -> None:
    assert stream(reply, cuts) == (answer, reasoning)
    assert split_think(reply) == (answer, reasoning.strip())


@pytest.mark.parametrize(("reply", "answer", "reasoning"), REPLIES)
def test_think_tags_one_character_per_chunk(reply: str, answer: str, reasoning: str) -> None:
    assert stream(reply, list(range(len(reply)))) == (answer, reasoning)


def test_a_template_opened_block_only_closes_and_is_still_reasoning() -> None:
    # Qwen3 / R1 chat templates put "<think>\n" in the prompt: the reply only closes it.
    assert split_think("the user said hi\n</think>\n\nHello!") == ("Hello!", "the user said hi")


def _response(status: int, body: object, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers, request=httpx.Request("POST", URL))


def _reraised(
    cls: type[Exception], status: int, message: str, headers: dict[str, str] | None = None
) -> Exception:
    """What a run sees: langchain-openai's class, raised from the `openai` one."""
    body = {"error": {"message": message, "type": "x"}}
    response = _response(status, body, headers)
    try:
        try:
            raise openai.APIStatusError(
                f"Error code: {status} - {message}", response=response, body=body
            )
        except openai.APIStatusError as inner:
            raise cls(message=inner.message, response=response, body=body["error"]) from inner
    except Exception as exc:  # noqa: BLE001 - the test keeps the raised object
        return exc


@pytest.mark.parametrize(
    ("cls", "status", "words", "transient"),
    [
        (OpenAIAuthenticationError, 401, "refused the credentials", False),
        (OpenAIRateLimitError, 429, "rate limiting", True),
        (OpenAIAPIError, 502, "model server failed", True),
        (OpenAIInvalidRequestError, 400, "refused the request", False),
    ],
)
def test_langchain_openai_errors_are_model_errors_with_status_and_server_message(
    cls: type[Exception], status: int, words: str, transient: bool
) -> None:
    exc = _reraised(cls, status, "the server explains", {"retry-after": "7"})
    message, kind, retryable = describe_error(exc)
    assert kind == "model" and words in message
    assert f"HTTP {status}: the server explains" in message
    problem = model_problem(exc)
    assert problem is not None and problem.transient is transient
    assert retryable is (status != 400)
    if status == 429:
        assert problem.retry_after_s == 7.0


def test_a_refused_connection_is_read_from_the_chain() -> None:
    request = httpx.Request("POST", URL)
    try:
        try:
            try:
                raise ConnectionRefusedError(111, "Connection refused")
            except OSError as os_error:
                raise httpx.ConnectError(
                    "[Errno 111] Connection refused", request=request
                ) from os_error
        except httpx.ConnectError as http_error:
            raise OpenAIConnectionError(
                message="Connection error.", request=request
            ) from http_error
    except OpenAIConnectionError as exc:
        message, kind, _ = describe_error(exc)
    assert kind == "model"
    assert message.startswith(
        f"Could not reach the model server at {URL} ([Errno 111] Connection refused)"
    )


def test_a_timeout_says_so() -> None:
    request = httpx.Request("POST", URL)
    try:
        try:
            raise httpx.ReadTimeout("timed out", request=request)
        except httpx.ReadTimeout as inner:
            raise OpenAITimeoutError(request=request) from inner
    except OpenAITimeoutError as exc:
        message, kind, retryable = describe_error(exc)
    assert kind == "model" and retryable and "did not answer in time (timed out)" in message


def test_errors_that_are_not_the_model_are_left_alone() -> None:
    assert describe_model_error(ValueError("bad value")) is None
    assert describe_model_error(ConnectionRefusedError(111, "refused")) is None
    assert describe_error(KeyError("x"))[1] == "error"


def test_a_transport_error_from_a_custom_model_is_described_without_its_request() -> None:
    # httpx raises on `.request` when none is attached (a wrapper that raised it itself).
    message, kind, retryable = describe_error(httpx.ConnectError("connection refused (test)"))
    assert kind == "model" and retryable
    assert message.startswith("Could not reach the model server (connection refused (test)).")
