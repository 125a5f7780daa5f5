"""Calling the chat model for one turn: stream its reply as events and turn it into
the `AIMessage` the graph stores, with tool-call arguments parsed strictly.

The model node (graph/agent/model_node.py) calls `stream_reply` and answers the calls that must
not run with `answer_invalid_calls`; nothing here touches state. What real servers do,
and what happens here:

- Any LangChain chat model: one that streams gives chunks; one that only implements
  `_generate`, or has `disable_streaming=True`, gives one whole `AIMessage`. Both
  produce the same events (a whole reply arrives as one text delta).
- A server that answers a streaming request with one JSON body (some proxies and
  gateways): the stream yields nothing and LangChain raises "No generation chunks
  were returned". The reply is fetched again without streaming, and this model is
  asked without streaming from then on (logged once).
- A reply that ends without a finish reason (the stream was cut: no `finish_reason`,
  no `[DONE]`) is kept, marked cut off (`additional_kwargs["gatehouse_cut_off"]`), and
  its tool calls are never run: each is answered with an error. The node then stops
  the run (`CUT_OFF_STOP`); `Session.retry` asks the model again.
- Reasoning (`<think>` blocks, `reasoning_content`) streams as `reasoning_delta`
  events and is stored apart from the answer (graph/agent/reasoning.py); it is not sent back to
  the model unless `ModelOptions.keep_reasoning`.
- A call that fails in a way worth retrying at once (connection, timeout, HTTP 429 or
  5xx, a stream that broke mid-reply; graph/agent/model_errors.py) is retried up to
  `ModelOptions.max_retries` times, with a `model_retried` event each time. Gatehouse
  retries here rather than in the `openai` client: the client only retries before a
  response starts and says nothing, so a person would neither see the wait nor get a
  stream that broke halfway retried.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableBinding, RunnableConfig
from langgraph.runtime import Runtime

from graph.agent.context import RunContext, cancelled
from graph.agent.emit import stream_writer, thread_of
from graph.agent.history import model_view, text_of
from graph.agent.model_errors import ModelProblem, model_problem
from graph.agent.reasoning import ThinkSplitter, split_think
from graph.protocol import events as ev
from graph.protocol.events import CUT_OFF_SOURCE
from graph.protocol.threads import CUT_OFF_KEY, REASONING_KEY, reasoning_of

log = logging.getLogger("gatehouse.model")

CUT_OFF_KIND = CUT_OFF_SOURCE  # the run's stop_kind, and the notice's source
CUT_OFF_STOP = "Stopped: the model's reply was cut off before it finished. Retry to ask the model again."
NO_CHUNKS = "No generation chunks were returned"
# Providers whose every complete reply says how it ended, and under which keys (Chat
# Completions: finish_reason; OpenAI's Responses API: status). For other models a
# missing reason means nothing (scripted models, custom wrappers).
FINISH_KEYS = {"openai": ("finish_reason", "status")}

# The event a piece of streamed text is, by what the <think> splitter found it to be.
_DELTAS: dict[str, type[ev.TextDelta] | type[ev.ReasoningDelta]] = {"text": ev.TextDelta, "reasoning": ev.ReasoningDelta}

# Models found not to stream (by id; the entry goes when the model does).
_NOT_STREAMING: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


@dataclass(frozen=True)
class ModelOptions:
    """How the model node calls the model ([model] in gatehouse.toml)."""

    # Retries of a call that failed in a way worth retrying at once.
    max_retries: int = 0
    # Send earlier replies' reasoning back to the model (as <think> text).
    keep_reasoning: bool = False
    # First wait before a retry; doubles each time, up to `max_retry_delay_s`. A
    # server's Retry-After wins (capped the same way).
    retry_delay_s: float = 0.5
    max_retry_delay_s: float = 30.0


def stream_reply(
    model: Any,
    system_prompt: str | None,
    view: Mapping[str, Any],
    history: Sequence[AnyMessage],
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    options: ModelOptions | None = None,
) -> tuple[AIMessage, bool]:
    """Stream the model's reply (text and reasoning deltas are events); (reply, cancelled).
    A cancelled reply keeps its text but drops half-streamed tool calls: nothing may be
    left without an answer."""
    options = options or ModelOptions()
    messages = prompt_messages(system_prompt, view, history, keep_reasoning=options.keep_reasoning)
    write = stream_writer()
    thread_id = thread_of(config)
    retries = 0
    while True:
        reply = _Reply(write, thread_id)
        try:
            ai, was_cancelled = reply.fetch(model, messages, config, runtime)
        except Exception as exc:
            problem = model_problem(exc)
            if problem is None or not problem.transient or retries >= options.max_retries or cancelled(runtime):
                raise
            retries += 1
            delay = _retry_delay(problem, retries, options)
            log.warning("%s Retry %d of %d in %.1f s.", problem.cause, retries, options.max_retries, delay)
            write(ev.ModelRetried(thread_id=thread_id, attempt=retries, max_retries=options.max_retries,
                                  delay_s=delay, reason=problem.cause, message_id=reply.message_id))
            if _wait(runtime, delay):
                return AIMessage(content="", id=f"run-{uuid.uuid4()}"), True
            continue
        if is_cut_off(ai):
            calls = len(ai.invalid_tool_calls)
            note = f" Its {calls} tool call{'s were' if calls > 1 else ' was'} not run." if calls else ""
            write(ev.Notice(thread_id=thread_id, source=CUT_OFF_KIND,
                            text=f"The model's reply was cut off: the stream ended before the reply was finished.{note}"))
        return ai, was_cancelled


class _Reply:
    """One attempt at the model's reply: streams its events, merges its chunks."""

    def __init__(self, write: Callable[[Any], None], thread_id: str) -> None:
        self.write = write
        self.thread_id = thread_id
        self.merged: AIMessage | AIMessageChunk | None = None
        self.message_id: str | None = None
        self._think = ThinkSplitter()

    def fetch(
        self, model: Any, messages: list[AnyMessage], config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> tuple[AIMessage, bool]:
        if streams(model):
            try:
                for chunk in model.stream(messages, config):
                    self.add(chunk)
                    if cancelled(runtime):
                        self.flush()
                        ai = to_message(self.merged, complete=False)
                        kept = {k: v for k, v in ai.additional_kwargs.items() if k == REASONING_KEY}
                        return AIMessage(content=ai.content, id=ai.id, additional_kwargs=kept), True
            except ValueError as exc:
                if self.merged is not None or NO_CHUNKS not in str(exc):
                    raise
                stop_streaming(model)
                self.add(model.invoke(messages, config, stream=False))
        else:
            self.add(model.invoke(messages, config, stream=False))
        self.flush()
        return to_message(self.merged), False

    def add(self, chunk: AIMessage) -> None:
        self.message_id = self.message_id or chunk.id
        if reasoning := reasoning_of(chunk.additional_kwargs, chunk.content):
            self._emit(ev.ReasoningDelta, reasoning, chunk.id)
        if text := text_of(chunk.content):
            for kind, piece in self._think.feed(text):
                self._emit(_DELTAS[kind], piece, chunk.id)
        if isinstance(chunk, AIMessageChunk) and isinstance(self.merged, AIMessageChunk):
            self.merged = self.merged + chunk
        else:
            # The first chunk, or a whole reply from a model that does not stream.
            self.merged = chunk

    def flush(self) -> None:
        for kind, piece in self._think.flush():
            self._emit(_DELTAS[kind], piece, self.message_id)

    def _emit(self, kind: type[ev.TextDelta] | type[ev.ReasoningDelta], text: str, message_id: str | None) -> None:
        self.write(kind(thread_id=self.thread_id, text=text, message_id=message_id or self.message_id))


def streams(model: Any) -> bool:
    return _NOT_STREAMING.get(id(_unwrap(model))) is None


def stop_streaming(model: Any) -> None:
    """Ask this model without streaming from now on: its server answered a streaming
    request with one JSON body (nothing came as server-sent events)."""
    inner = _unwrap(model)
    name = getattr(inner, "model_name", None) or getattr(inner, "model", None) or type(inner).__name__
    where = getattr(inner, "openai_api_base", None)
    log.warning(
        "the model server%s answered a streaming request without streaming; asking %s without "
        "streaming from now on", f" at {where}" if where else "", name,
    )
    _NOT_STREAMING[id(inner)] = inner


def _unwrap(model: Any) -> Any:
    while isinstance(model, RunnableBinding):
        model = model.bound
    return model


def _retry_delay(problem: ModelProblem, retries: int, options: ModelOptions) -> float:
    if problem.retry_after_s is not None:
        return min(problem.retry_after_s, options.max_retry_delay_s)
    return min(options.retry_delay_s * 2 ** (retries - 1), options.max_retry_delay_s)


def _wait(runtime: Runtime[RunContext] | None, seconds: float) -> bool:
    """Wait before a retry; True when the person pressed Stop meanwhile."""
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, RunContext):
        return ctx.cancel.wait(seconds)
    time.sleep(seconds)
    return False


def system_text(base: str | None, extra: Mapping[str, str]) -> str:
    return "\n\n".join(p for p in [base or "", *extra.values()] if p)


def prompt_messages(
    system_prompt: str | None, view: Mapping[str, Any], history: Sequence[AnyMessage], *, keep_reasoning: bool
) -> list[AnyMessage]:
    """What the model is sent: the system text, then the history from the latest
    compaction summary on (history.model_view) with earlier replies' reasoning left
    out (or, with `keep_reasoning`, as <think> text: the one form every server reads back)."""
    prompt = system_text(system_prompt, view.get("model_context") or {})
    messages: list[AnyMessage] = [SystemMessage(prompt)] if prompt else []
    for m in model_view(history):
        if isinstance(m, AIMessage) and REASONING_KEY in m.additional_kwargs:
            kwargs = {k: v for k, v in m.additional_kwargs.items() if k != REASONING_KEY}
            content = m.content
            thought = m.additional_kwargs[REASONING_KEY]
            if keep_reasoning and thought and isinstance(content, str):
                content = f"<think>\n{thought}\n</think>\n\n{content}"
            m = m.model_copy(update={"additional_kwargs": kwargs, "content": content})
        messages.append(m)
    return messages


def is_cut_off(ai: AIMessage) -> bool:
    return bool(ai.additional_kwargs.get(CUT_OFF_KEY))


def _ended_early(reply: AIMessage) -> bool:
    keys = FINISH_KEYS.get(str(reply.response_metadata.get("model_provider") or ""))
    return keys is not None and not any(reply.response_metadata.get(k) for k in keys)


def to_message(chunk: AIMessage | None, *, complete: bool = True) -> AIMessage:
    """The stored form of a reply: strict tool calls, reasoning apart from the answer,
    and (when `complete`, i.e. not stopped by the person) the cut-off mark."""
    if chunk is None:
        return AIMessage(content="", id=f"run-{uuid.uuid4()}")
    calls, invalid = strict_tool_calls(chunk)
    content = chunk.content
    kwargs = dict(chunk.additional_kwargs)
    if isinstance(content, str):
        answer, thought = split_think(content)
        if thought:
            content = answer
            earlier = kwargs.get(REASONING_KEY)
            kwargs[REASONING_KEY] = f"{earlier}\n\n{thought}" if isinstance(earlier, str) and earlier else thought
    if complete and _ended_early(chunk):
        kwargs[CUT_OFF_KEY] = True
        # Arguments that happen to parse are still not known to be the ones the model meant.
        invalid += [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "error": "the reply was cut off",
             "type": "invalid_tool_call"}
            for c in calls
        ]
        calls = []
    return AIMessage(
        content=content,
        id=chunk.id or f"run-{uuid.uuid4()}",
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=chunk.usage_metadata,
        response_metadata=chunk.response_metadata,
        additional_kwargs=kwargs,
    )


def _raw_arguments(reply: AIMessage) -> list[dict[str, Any]]:
    """The argument text as the model sent it, where the reply still has it: the
    streamed tool-call chunks, or OpenAI-style `additional_kwargs["tool_calls"]`."""
    if isinstance(reply, AIMessageChunk) and reply.tool_call_chunks:
        return [{"id": c.get("id"), "index": c.get("index", i), "args": c.get("args")}
                for i, c in enumerate(reply.tool_call_chunks)]
    raw = reply.additional_kwargs.get("tool_calls")
    if not isinstance(raw, list):
        return []
    return [{"id": c.get("id"), "index": i, "args": (c.get("function") or {}).get("arguments")}
            for i, c in enumerate(raw) if isinstance(c, dict)]


def strict_tool_calls(reply: AIMessage) -> tuple[list[Any], list[Any]]:
    """Parse tool-call arguments strictly.

    LangChain assembles streamed arguments with a lenient partial-JSON parser, which
    turns `{"path": "x"` (cut off) into a valid-looking call. A call that would run
    with arguments the model never finished must be answered with an error instead.
    A whole (non-streamed) reply is checked the same way where its raw argument text
    is kept; LangChain parses it strictly otherwise.
    """
    calls: list[Any] = []
    invalid: list[Any] = list(reply.invalid_tool_calls)
    raw = {c["index"]: c for c in _raw_arguments(reply)}
    for i, call in enumerate(reply.tool_calls):
        call_id = call.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        source = next((c for c in raw.values() if c.get("id") and c.get("id") == call.get("id")), None)
        if source is None and len(raw) == len(reply.tool_calls):
            source = list(raw.values())[i]
        text = source.get("args") if source else None
        if isinstance(text, str) and text.strip():
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                invalid.append({"name": call["name"], "args": text, "id": call_id, "error": str(exc), "type": "invalid_tool_call"})
                continue
            if not isinstance(parsed, dict):
                invalid.append({"name": call["name"], "args": text, "id": call_id, "error": "not a JSON object", "type": "invalid_tool_call"})
                continue
        calls.append({**call, "id": call_id})
    for bad in invalid:
        bad["id"] = bad.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return calls, invalid


def answer_invalid_calls(ai: AIMessage) -> list[ToolMessage]:
    """Calls that must not run, answered with an error now: arguments that were not a
    JSON object, and every call of a reply that was cut off."""
    cut = is_cut_off(ai)
    return [
        ToolMessage(
            content=(
                f"Error: your reply was cut off before it finished, so this call to {c.get('name') or 'a tool'} "
                "was not run."
                if cut
                else f"Error: the arguments for {c.get('name') or 'this tool'} were not a valid JSON object "
                f"({c.get('error') or 'could not parse'}): {c.get('args')!r}"
            ),
            tool_call_id=c["id"],
            name=c.get("name") or "unknown",
            status="error",
        )
        for c in ai.invalid_tool_calls
    ]
