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
- A reply that was cut off (stopped at max_tokens, a stream that ended early, and the
  signs a proxy leaves when it hides that: graph/agent/cut_off.py) is kept, marked
  cut off (`additional_kwargs["gatehouse_cut_off"]`), and its tool calls are never
  run: each is answered with an error, and no `tool_started` is shown for them. The
  node then stops the run (`CUT_OFF_STOP`); `Session.retry` asks the model again,
  from the history before the cut reply (`prompt_messages` leaves it out).
- An empty reply (no text, no tool call) is asked for again once without streaming
  (proxies in front of a server that does not stream send an empty stream); still
  empty, the run fails with `EmptyReply`: never a silent, empty success.
- Gatehouse's own words (stop notices, a cut reply and the errors that answer its
  calls) are never sent to the model as if it had said them.
- Reasoning (`<think>` blocks, `reasoning_content`) streams as `reasoning_delta`
  events and is stored apart from the answer (graph/agent/reasoning.py); it is not sent back to
  the model unless `ModelOptions.keep_reasoning`.
- A call that fails in a way worth retrying at once (connection, timeout, HTTP 429 or
  5xx, a stream that broke mid-reply; graph/agent/model_errors.py) is retried up to
  `ModelOptions.max_retries` times, with a `model_retried` event each time. Gatehouse
  retries here rather than in the `openai` client: the client only retries before a
  response starts and says nothing, so a person would neither see the wait nor get a
  stream that broke halfway retried. An error response from a LiteLLM proxy is not
  retried again: the proxy has already retried it (its own `num_retries`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import RunnableBinding, RunnableConfig
from langgraph.runtime import Runtime

from graph.agent import tool_messages as say
from graph.agent.call_ids import id_of
from graph.agent.context import RunContext, cancelled
from graph.agent.cut_off import cut_reason, notice_text
from graph.agent.emit import stream_writer, thread_of
from graph.agent.history import text_of, view_start
from graph.agent.model_errors import EmptyReply, ModelProblem, model_problem
from graph.agent.prefix_memo import PrefixMemo
from graph.agent.reasoning import ThinkSplitter, drop_reasoning_blocks, split_think
from graph.protocol import events as ev
from graph.protocol.events import CUT_OFF_SOURCE
from graph.protocol.threads import (
    CUT_OFF_KEY,
    NOTICE_MARK,
    REASONING_KEY,
    SUMMARY_MARK,
    TOOL_STATUS_KEY,
    reasoning_of,
)

log = logging.getLogger("gatehouse.model")

CUT_OFF_KIND = CUT_OFF_SOURCE  # the run's stop_kind, and the notice's source
CUT_OFF_STOP = (
    "Stopped: the model's reply was cut off before it finished. Retry to ask the model again."
)
CUT_OFF_REASON_KEY = "gatehouse_cut_off_reason"
NO_CHUNKS = "No generation chunks were returned"
# LangChain's stock fake whose `_stream` drops the message's tool calls (it streams the
# text only): asked without streaming, so its tool calls arrive, and a streamed attempt
# never uses up its next message.
_LOSSY_STREAMS = ("GenericFakeChatModel",)

# The event a piece of streamed text is, by what the <think> splitter found it to be.
_DELTAS: dict[str, type[ev.TextDelta] | type[ev.ReasoningDelta]] = {
    "text": ev.TextDelta,
    "reasoning": ev.ReasoningDelta,
}

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
            # Empty with no usage chunk is how LiteLLM streams what a server that does
            # not stream (or its own mock tool calls) answered: asked again, not "cut".
            if (
                not was_cancelled
                and is_empty(ai)
                and ai.additional_kwargs.get(CUT_OFF_REASON_KEY) in (None, "usage")
            ):
                ai = _ask_again_without_streaming(model, messages, config, runtime, reply)
        except Exception as exc:
            problem = model_problem(exc)
            if (
                problem is None
                or not problem.transient
                or retries >= options.max_retries
                or cancelled(runtime)
            ):
                raise
            if problem.proxy_retried:
                # A LiteLLM proxy answered with an error after its own retries: more of
                # ours would multiply them (3 x 3 upstream calls for one persistent 500).
                log.info("not retrying: the LiteLLM proxy has already retried (%s)", problem.cause)
                raise
            retries += 1
            delay = _retry_delay(problem, retries, options)
            # The `model_retried` event is what front ends show; a warning too would
            # print the same line twice in the terminal.
            log.info(
                "%s Retry %d of %d in %.1f s.", problem.cause, retries, options.max_retries, delay
            )
            write(
                ev.ModelRetried(
                    thread_id=thread_id,
                    attempt=retries,
                    max_retries=options.max_retries,
                    delay_s=delay,
                    reason=problem.cause,
                    message_id=reply.message_id,
                )
            )
            if _wait(runtime, delay):
                return AIMessage(content="", id=f"run-{uuid.uuid4()}"), True
            continue
        if is_cut_off(ai):
            write(
                ev.Notice(
                    thread_id=thread_id,
                    source=CUT_OFF_KIND,
                    text=notice_text(
                        str(ai.additional_kwargs.get(CUT_OFF_REASON_KEY)),
                        len(ai.invalid_tool_calls),
                    ),
                )
            )
        return ai, was_cancelled


def is_empty(ai: AIMessage) -> bool:
    """No answer and no tool call (reasoning alone is no answer)."""
    return not (text_of(ai.content).strip() or ai.tool_calls or ai.invalid_tool_calls)


def _ask_again_without_streaming(
    model: Any,
    messages: list[AnyMessage],
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    first: _Reply,
) -> AIMessage:
    """An empty reply, asked for once more without streaming; `EmptyReply` when that
    is empty too. A full answer means the stream lost it (a proxy in front of a server
    that does not stream sends an empty stream): this model is asked without streaming
    from then on."""
    if not first.streamed:
        raise EmptyReply(_model_label(model), streamed=False)
    log.info(
        "%s sent an empty streamed reply; asking once more without streaming", _model_label(model)
    )
    # Shown like any retry: whatever the empty attempt streamed (reasoning) is dropped.
    first.write(
        ev.ModelRetried(
            thread_id=first.thread_id,
            attempt=1,
            max_retries=1,
            delay_s=0.0,
            reason="The model's streamed reply was empty; asking once more without streaming.",
            message_id=first.message_id,
        )
    )
    again = _Reply(first.write, first.thread_id)
    ai, _ = again.fetch(model, messages, config, runtime, stream=False)
    if is_empty(ai) and ai.additional_kwargs.get(CUT_OFF_REASON_KEY) in (None, "usage"):
        raise EmptyReply(_model_label(model), streamed=True)
    stop_streaming(model, why="its streamed reply was empty, asked without streaming it answered")
    return ai


class _Reply:
    """One attempt at the model's reply: streams its events, merges its chunks.

    The chunks are kept and merged once, when the reply is read (`merged`), as
    LangChain's own `stream` does: merging each chunk into the sum so far (`sum +
    chunk`) copies the sum and parses the tool calls' partial JSON again every time,
    quadratic in the reply (a 54 KB `write_file` streamed in ~2,000 chunks took ~6 s of
    CPU that way, ~20 ms merged once)."""

    def __init__(self, write: Callable[[Any], None], thread_id: str) -> None:
        self.write = write
        self.thread_id = thread_id
        # The reply so far: the chunks streamed (merged when read), or a whole reply.
        self._chunks: list[AIMessageChunk] = []
        self._whole: AIMessage | None = None
        self.message_id: str | None = None
        self.streamed = False
        self._think = ThinkSplitter()
        self._part: ev.PartKind | None = None  # the kind of the part streaming now
        self._parts = 0  # parts started so far (the next part's index)

    def fetch(
        self,
        model: Any,
        messages: list[AnyMessage],
        config: RunnableConfig,
        runtime: Runtime[RunContext],
        *,
        stream: bool = True,
    ) -> tuple[AIMessage, bool]:
        prompt = chat_input(model, messages)
        if stream and streams(model):
            self.streamed = True
            try:
                for chunk in model.stream(prompt, config):
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
                self.streamed = False
                self.add(model.invoke(prompt, config, stream=False))
        else:
            self.add(model.invoke(prompt, config, stream=False))
        self.flush()
        ai = to_message(self.merged, usage_requested=self.streamed and requests_usage(model))
        for call in ai.tool_calls:
            self.start_part("tool_call", ai.id, call_id=call["id"], tool_name=call["name"])
        return ai, False

    def add(self, chunk: AIMessage) -> None:
        self.message_id = self.message_id or chunk.id
        if reasoning := reasoning_of(chunk.additional_kwargs, chunk.content):
            self._emit(ev.ReasoningDelta, reasoning, chunk.id)
        if text := text_of(chunk.content):
            for kind, piece in self._think.feed(text):
                self._emit(_DELTAS[kind], piece, chunk.id)
        if isinstance(chunk, AIMessageChunk):
            self._whole = None
            self._chunks.append(chunk)
        else:
            # A whole reply, from a model that does not stream: it replaces what came.
            self._whole, self._chunks = chunk, []

    @property
    def merged(self) -> AIMessage | None:
        """The reply so far, its chunks merged (once: the result is kept)."""
        if self._whole is not None:
            return self._whole
        if len(self._chunks) > 1:
            self._chunks = [add_ai_message_chunks(self._chunks[0], *self._chunks[1:])]
        return self._chunks[0] if self._chunks else None

    def flush(self) -> None:
        for kind, piece in self._think.flush():
            self._emit(_DELTAS[kind], piece, self.message_id)

    def _emit(
        self, kind: type[ev.TextDelta] | type[ev.ReasoningDelta], text: str, message_id: str | None
    ) -> None:
        part = kind.model_fields["type"].default.removesuffix("_delta")
        if part != self._part:
            self.start_part(part, message_id or self.message_id)
        self.write(
            kind.trusted(
                thread_id=self.thread_id, text=text, message_id=message_id or self.message_id
            )
        )

    def start_part(self, kind: ev.PartKind, message_id: str | None, **call: Any) -> None:
        """A `part_started` event: deltas of another kind than the last, or a tool call."""
        self._part = kind
        self.write(
            ev.PartStarted.trusted(
                thread_id=self.thread_id,
                message_id=message_id,
                index=self._parts,
                part_kind=kind,
                **call,
            )
        )
        self._parts += 1


def chat_input(model: Any, messages: list[AnyMessage]) -> Any:
    """What the model is handed: for a chat model, the messages as the `ChatPromptValue`
    it would make of them, made without checking each (they are messages: the state's
    reducer made them so). A chat model converts a list message by message (~1 µs each:
    ~1 ms a call at 1,000 messages) and reads a prompt value as it is. Anything else
    (a plain Runnable standing in for a model) gets the list."""
    if isinstance(_unwrap(model), BaseChatModel):
        return ChatPromptValue.model_construct(messages=messages)
    return messages


def streams(model: Any) -> bool:
    inner = _unwrap(model)
    if _NOT_STREAMING.get(id(inner)) is None and (lossy := _lossy_stream(inner)):
        stop_streaming(inner, why=f"{lossy}'s stream drops tool calls (it streams the text only)")
    return _NOT_STREAMING.get(id(inner)) is None


def _lossy_stream(model: Any) -> str | None:
    """The stock class whose `_stream` this model still uses, when that one loses tool calls."""
    kind: Any = type(model)
    for cls in kind.__mro__:
        if cls.__name__ in _LOSSY_STREAMS and cls.__module__.startswith("langchain_core."):
            return cls.__name__ if kind._stream is cls._stream else None
    return None


def stop_streaming(model: Any, why: str | None = None) -> None:
    """Ask this model without streaming from now on (logged once, with the reason):
    by default, its server answered a streaming request with one JSON body (nothing
    came as server-sent events)."""
    inner = _unwrap(model)
    where = getattr(inner, "openai_api_base", None)
    if why is None:
        why = (
            f"the model server{f' at {where}' if where else ''} answered a streaming request without streaming"
            if _speaks_http(inner)
            else f"{type(inner).__name__}.stream() gave no chunks"
        )
    log.warning("%s; asking %s without streaming from now on", why, _model_label(inner))
    _NOT_STREAMING[id(inner)] = inner


def _speaks_http(model: Any) -> bool:
    return hasattr(model, "openai_api_base") or hasattr(model, "base_url")


def _model_label(model: Any) -> str:
    inner = _unwrap(model)
    name = getattr(inner, "model_name", None) or getattr(inner, "model", None)
    return str(name) if isinstance(name, str) and name else type(inner).__name__


def requests_usage(model: Any) -> bool:
    """This model asks its server for a usage chunk at the end of each stream."""
    kwargs: dict[str, Any] = {}
    while isinstance(model, RunnableBinding):
        kwargs = {**model.kwargs, **kwargs}
        model = model.bound
    if "stream_usage" in kwargs:
        return bool(kwargs["stream_usage"])
    options = kwargs.get("stream_options") or (getattr(model, "model_kwargs", None) or {}).get(
        "stream_options"
    )
    if isinstance(options, dict) and "include_usage" in options:
        return bool(options["include_usage"])
    return getattr(model, "stream_usage", None) is True


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
    system_prompt: str | None,
    view: Mapping[str, Any],
    history: Sequence[AnyMessage],
    *,
    keep_reasoning: bool,
) -> list[AnyMessage]:
    """What the model is sent: the system text, then the history from the latest
    compaction summary on (history.model_view) with earlier replies' reasoning left
    out (or, with `keep_reasoning`, as <think> text: the one form every server reads
    back; reasoning content blocks stay as they came).

    Left out too, whatever `keep_reasoning` says: Gatehouse's own notices (a stop's
    reason is the agent's words, not the model's), and a cut-off reply with the errors
    that answered its calls, so asking again starts from the history before it. The
    person still sees both (they stay in the thread)."""
    prompt = system_text(system_prompt, view.get("model_context") or {})
    sent = _sent_memos[keep_reasoning](history).messages
    return [SystemMessage(prompt), *sent] if prompt else list(sent)


class _Sent(NamedTuple):
    """What is sent of a history so far, and the ids of a left-out reply's calls whose
    answers are left out too."""

    messages: tuple[AnyMessage, ...]
    unsent: frozenset[str]


def _sent_after(keep_reasoning: bool) -> Callable[[_Sent, Sequence[AnyMessage]], _Sent]:
    """The fold behind `prompt_messages`: what is sent of a history, then of more."""

    def fold(sent: _Sent, more: Sequence[AnyMessage]) -> _Sent:
        messages, unsent = list(sent.messages), set(sent.unsent)
        for m in more:
            if m.additional_kwargs.get(SUMMARY_MARK):  # the model's view starts here (model_view)
                messages, unsent = [], set()
            if isinstance(m, AIMessage):
                kwargs = m.additional_kwargs
                if kwargs.get(NOTICE_MARK) or kwargs.get(CUT_OFF_KEY):  # a notice, or `is_cut_off`
                    unsent = {
                        id_of(c) for c in [*m.tool_calls, *m.invalid_tool_calls] if c.get("id")
                    }
                    continue
                m = _without_reasoning(m, keep_reasoning)
            elif unsent and isinstance(m, ToolMessage) and m.tool_call_id in unsent:
                unsent.discard(m.tool_call_id)
                continue
            if unsent:
                unsent = set()
            messages.append(m)
        return _Sent(tuple(messages), frozenset(unsent))

    return fold


_NOTHING_SENT = _Sent((), frozenset())
# What the model is sent of a history, carried from one call to the next (prefix_memo.py):
# the messages sent, in order, for each `keep_reasoning`.
_sent_memos: dict[bool, PrefixMemo[_Sent]] = {
    keep: PrefixMemo(
        _NOTHING_SENT, _sent_after(keep), seed=lambda m: (view_start(m), _NOTHING_SENT)
    )
    for keep in (False, True)
}


def _without_reasoning(m: AIMessage, keep_reasoning: bool) -> AIMessage:
    if REASONING_KEY not in m.additional_kwargs and (
        keep_reasoning or not isinstance(m.content, list)
    ):
        return m  # nothing to leave out or render (most replies): no copy of its kwargs
    kwargs = {k: v for k, v in m.additional_kwargs.items() if k != REASONING_KEY}
    content = m.content
    thought = m.additional_kwargs.get(REASONING_KEY)
    if keep_reasoning:
        if thought and isinstance(content, str):
            content = f"<think>\n{thought}\n</think>\n\n{content}"
    else:
        content = drop_reasoning_blocks(content)
    if content is m.content and len(kwargs) == len(m.additional_kwargs):
        return m
    return m.model_copy(update={"additional_kwargs": kwargs, "content": content})


def is_cut_off(ai: AIMessage) -> bool:
    return bool(ai.additional_kwargs.get(CUT_OFF_KEY))


def to_message(
    chunk: AIMessage | None, *, complete: bool = True, usage_requested: bool = False
) -> AIMessage:
    """The stored form of a reply: strict tool calls, reasoning apart from the answer,
    and (when `complete`, i.e. not stopped by the person) the cut-off mark, with why
    (graph/agent/cut_off.py)."""
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
            kwargs[REASONING_KEY] = (
                f"{earlier}\n\n{thought}" if isinstance(earlier, str) and earlier else thought
            )
    reason = (
        cut_reason(
            chunk.response_metadata,
            chunk.content if isinstance(chunk.content, str) else "",
            [c.get("args") for c in _raw_arguments(chunk)],
            has_usage=chunk.usage_metadata is not None,
            usage_requested=usage_requested,
        )
        if complete
        else None
    )
    if reason is not None:
        kwargs[CUT_OFF_KEY] = True
        kwargs[CUT_OFF_REASON_KEY] = reason
        # Arguments that happen to parse are still not known to be the ones the model meant.
        invalid += [
            {
                "name": c["name"],
                "args": json.dumps(c["args"]),
                "id": c["id"],
                "error": "the reply was cut off",
                "type": "invalid_tool_call",
            }
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
        return [
            {"id": c.get("id"), "index": c.get("index", i), "args": c.get("args")}
            for i, c in enumerate(reply.tool_call_chunks)
        ]
    raw = reply.additional_kwargs.get("tool_calls")
    if not isinstance(raw, list):
        return []
    return [
        {"id": c.get("id"), "index": i, "args": (c.get("function") or {}).get("arguments")}
        for i, c in enumerate(raw)
        if isinstance(c, dict)
    ]


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
        source = next(
            (c for c in raw.values() if c.get("id") and c.get("id") == call.get("id")), None
        )
        if source is None and len(raw) == len(reply.tool_calls):
            source = list(raw.values())[i]
        text = source.get("args") if source else None
        if isinstance(text, str) and text.strip():
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                invalid.append(
                    {
                        "name": call["name"],
                        "args": text,
                        "id": call_id,
                        "error": str(exc),
                        "type": "invalid_tool_call",
                    }
                )
                continue
            if not isinstance(parsed, dict):
                invalid.append(
                    {
                        "name": call["name"],
                        "args": text,
                        "id": call_id,
                        "error": "not a JSON object",
                        "type": "invalid_tool_call",
                    }
                )
                continue
        calls.append({**call, "id": call_id})
    for bad in invalid:
        bad["id"] = bad.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return calls, invalid


def answer_invalid_calls(ai: AIMessage) -> list[ToolMessage]:
    """Calls that must not run, answered with an error now: arguments that were not a
    JSON object, and every call of a reply that was cut off."""
    cut = is_cut_off(ai)
    return [_unrun_answer(c, cut) for c in ai.invalid_tool_calls]


def _unrun_answer(call: Mapping[str, Any], cut: bool) -> ToolMessage:
    name = call.get("name")
    text = say.cut_off(name) if cut else say.not_json(name, call.get("error"), call.get("args"))
    msg = say.error_result({**call, "name": name or "unknown"}, text)
    if cut:
        # Marked as an error result here: a cut call is answered without the
        # tool_started / tool_finished events of a call that was tried.
        msg.additional_kwargs[TOOL_STATUS_KEY] = "error"
    return msg
