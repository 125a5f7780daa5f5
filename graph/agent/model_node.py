"""The `model` node: a new run's counters, limits, cancel and hook stops, the before_llm
hooks, and the model's reply streamed as events. Real servers: a streaming request
answered with one JSON body, or an empty stream (proxies), is asked again without
streaming; a transient failure (model_errors.py) is retried here, with a
`model_retried` event each (the `openai` client retries silently, and only before a
response starts), but not a LiteLLM proxy's error response (it already retried)."""

from __future__ import annotations

import logging
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, RemoveMessage
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import RunnableBinding, RunnableConfig
from langgraph.runtime import Runtime

from gatehouse.graph.agent.call_ids import fresh_call_ids, id_of
from gatehouse.graph.agent.client_input import announce_dropped
from gatehouse.graph.agent.context import RunContext, cancelled, context_of, model_call_limit
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import emit, stream_writer, thread_of
from gatehouse.graph.agent.gate import keep_read
from gatehouse.graph.agent.history import last_human_id, open_turn_before_new_input, text_of
from gatehouse.graph.agent.message_merge import merge_messages
from gatehouse.graph.agent.model_call import (
    CUT_OFF_KIND,
    CUT_OFF_REASON_KEY,
    CUT_OFF_STOP,
    after_reply,
    announce,
    answer_now,
    is_cut_off,
    is_empty,
    notice_text,
    prompt_messages,
    to_message,
)
from gatehouse.graph.agent.model_errors import EmptyReply, model_problem
from gatehouse.graph.agent.reasoning import ThinkSplitter
from gatehouse.graph.agent.run_end import STOPPED_BY_PERSON, ends_here, stop
from gatehouse.graph.agent.state import RUN_KEYS, AgentState, add_usage
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.decisions import StandingGrant
from gatehouse.graph.protocol.threads import REASONING_KEY, reasoning_of

log = logging.getLogger("gatehouse.model")
NO_CHUNKS = "No generation chunks were returned"
# LangChain's stock fake whose `_stream` drops tool calls: asked without streaming.
_LOSSY_STREAMS = ("GenericFakeChatModel",)
# Models found not to stream (by id; the entry goes when the model does).
_NOT_STREAMING: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def call_model(
    state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext], *, deps: AgentDeps
) -> dict[str, Any]:
    if not state.get("messages"):
        # A bare `Command(resume=...)` on a thread that never started: nothing to do.
        return {}
    if (found := open_turn_before_new_input(state["messages"])) is not None:
        # New input after open calls: held out of the history until they are answered.
        announce_dropped(config)
        return {
            "messages": [RemoveMessage(id=m.id) for m in found[1] if m.id],
            "held_messages": [*(state.get("held_messages") or []), *found[1]],
        }
    # Input held while calls were open joins the history now that each has its answer.
    stored = state["messages"]  # the history as saved, before this step
    released = list(state.get("held_messages") or [])
    if released:
        state = {**state, "messages": merge_messages(state["messages"], [released])}
    # A new user message starts a run: the per-run keys are reset.
    latest = last_human_id(state["messages"], None)
    fresh = latest is not None and latest != state.get("run_message_id")
    update: dict[str, Any] = {**RUN_KEYS, "run_message_id": latest} if fresh else {}
    if released:
        update.update(messages=released, held_messages=[])
    if state.get("rerun_llm") and "rerun_llm" not in update:
        update["rerun_llm"] = False  # this call is the re-ask
    view: dict[str, Any] = {**state, **update}
    if cancelled(runtime):
        return {**update, **stop(STOPPED_BY_PERSON, "cancelled")}
    if view.get("stop_reason"):
        return update
    limit = model_call_limit(runtime, deps.max_model_calls)
    if view.get("run_model_calls", 0) >= limit:
        reason = f"Stopped: this run reached its limit of {limit} model calls. Send a message to continue."
        return {**update, **stop(reason, "stopped")}
    # Extra system text lives for one model call: the hooks write it afresh each time.
    hooked = deps.hooks.run("before_llm", {**view, "model_context": {}})
    update.update({"model_context": {}, **hooked})
    before = [*released, *hooked.get("messages", [])]
    if hooked.get("stop_reason"):
        update.setdefault("stop_kind", "stopped")
        update["messages"] = before
        return update
    view.update(update)
    history = state["messages"]
    if hooked.get("messages"):
        history = merge_messages(history, [hooked["messages"]])
    ai, was_cancelled = stream_reply(deps, view, history, config, runtime)
    # Before anything sees the calls: a repeated id gets one of its own (call_ids.py).
    ai = own_call_ids(ai, history, view.get("held_messages") or [], deps, config, runtime)
    update["run_model_calls"] = view.get("run_model_calls", 0) + 1
    if ai.usage_metadata:
        counts = cast(Mapping[str, float], ai.usage_metadata)
        usage = {k: counts.get(k, 0) for k in ("input_tokens", "output_tokens", "total_tokens")}
        update["usage"] = add_usage(update.get("usage"), usage)
        update["run_usage"] = add_usage(view.get("run_usage"), usage)
        emit(ev.Usage, **usage)
    if was_cancelled:
        update.update(stop(STOPPED_BY_PERSON, "cancelled"))
    elif is_cut_off(ai):
        update.update(stop(CUT_OFF_STOP, CUT_OFF_KIND))
    elif deps.hooks["after_llm"]:
        return after_reply(
            update, {**view, "usage": state.get("usage") or {}}, history, ai, before, deps, stored
        )
    update["messages"] = [*before, ai, *answer_now(ai, history, update, deps)]
    ends = ends_here(ai, update, bool(deps.hooks["on_exit"]))
    # A hook's own user message (a summary, a nudge) belongs to this run.
    update["run_message_id"] = last_human_id(history, view.get("run_message_id"))
    announce(ai, stored, update, ends)
    return update


def own_call_ids(
    ai: AIMessage,
    history: Sequence[AnyMessage],
    held: Sequence[AnyMessage],
    deps: AgentDeps,
    config: RunnableConfig,
    runtime: Runtime[RunContext] | None,
) -> AIMessage:
    """`ai` with each call id the history, the decision log or the journal holds
    replaced (call_ids.py). The log is read with the grants, and that read is kept as
    this step's gate read (the routing after this node, `dispatch`, reads no more): the
    calls' ids then are ones the log holds no record under, or new ones."""
    thread_id = thread_of(config)
    grants: list[list[StandingGrant]] = []

    def logged(call_ids: Sequence[str]) -> set[str]:
        if deps.decisions is None:
            journal = deps.journal
            return set() if journal is None else journal.logged_ids(thread_id, call_ids)
        (standing, _), found = deps.decisions.reply_reads(thread_id, call_ids, deps.journal)
        grants.append(standing)
        return found

    ai = fresh_call_ids(ai, history, held, logged)
    if grants:
        keep_read(
            config, runtime, thread_id, [id_of(c) for c in ai.tool_calls], (grants[0], []), ahead=0
        )
    return ai


def stream_reply(
    deps: AgentDeps,
    view: Mapping[str, Any],
    history: Sequence[AnyMessage],
    config: RunnableConfig,
    runtime: Runtime[RunContext],
) -> tuple[AIMessage, bool]:
    """(reply, cancelled); a cancelled reply drops its half-streamed tool calls."""
    model, options = deps.model, deps.model_options
    messages = prompt_messages(
        deps.system_prompt, view, history, keep_reasoning=options.keep_reasoning
    )
    write = stream_writer()
    thread_id = thread_of(config)
    retries = 0
    while True:
        reply = _Reply(write, thread_id)
        try:
            ai, was_cancelled = reply.fetch(model, messages, config, runtime)
            if not was_cancelled and is_empty(ai):
                ai = reply.ask_again(model, messages, config, runtime)
        except Exception as exc:
            problem = model_problem(exc)
            if problem is None or not problem.transient or retries >= options.max_retries:
                raise
            if cancelled(runtime):
                raise
            if problem.proxy_retried:
                # More retries of ours would multiply the proxy's (3 x 3 upstream calls).
                log.info("not retrying: the LiteLLM proxy has already retried (%s)", problem.cause)
                raise
            retries += 1
            first_wait = options.retry_delay_s * 2 ** (retries - 1)
            delay = min(
                first_wait if problem.retry_after_s is None else problem.retry_after_s,
                options.max_retry_delay_s,
            )
            # Logged as info: front ends show the event; a warning would print it twice.
            log.info(
                "%s Retry %d of %d in %.1f s.", problem.cause, retries, options.max_retries, delay
            )
            reply.retried(retries, options.max_retries, delay, problem.cause)
            if _wait(runtime, delay):
                return AIMessage(content="", id=f"run-{uuid.uuid4()}"), True
            continue
        if is_cut_off(ai):
            reason = str(ai.additional_kwargs.get(CUT_OFF_REASON_KEY))
            text = notice_text(reason, len(ai.invalid_tool_calls))
            write(ev.Notice(thread_id=thread_id, source=CUT_OFF_KIND, text=text))
        return ai, was_cancelled


class _Reply:
    """One attempt at the model's reply: streams its events, merges its chunks once when
    read (`sum + chunk` per chunk re-parses the JSON: a 54 KB call took ~6 s of CPU)."""

    def __init__(self, write: Callable[[Any], None], thread_id: str) -> None:
        self.write = write
        self.thread_id = thread_id
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
        stream: bool = True,
    ) -> tuple[AIMessage, bool]:
        # A chat model's `ChatPromptValue` built unchecked (~1 ms saved at 1,000 messages).
        chat = isinstance(_unwrap(model), BaseChatModel)
        prompt: Any = ChatPromptValue.model_construct(messages=messages) if chat else messages
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
        if not self.streamed:
            self.add(model.invoke(prompt, config, stream=False))
        self.flush()
        ai = to_message(self.merged, usage_requested=self.streamed and requests_usage(model))
        for call in ai.tool_calls:
            self.start_part("tool_call", ai.id, call_id=call["id"], tool_name=call["name"])
        return ai, False

    def ask_again(
        self, model: Any, messages: list[AnyMessage], config: RunnableConfig, runtime: Any
    ) -> AIMessage:
        """An empty reply asked for once more without streaming (if it answers: for good)."""
        label = _model_label(model)
        if not self.streamed:
            raise EmptyReply(label, streamed=False)
        log.info("%s sent an empty streamed reply; asking once more without streaming", label)
        # Shown like any retry: whatever the empty attempt streamed (reasoning) is dropped.
        self.retried(
            1, 1, 0.0, "The model's streamed reply was empty; asking once more without streaming."
        )
        ai, _ = _Reply(self.write, self.thread_id).fetch(model, messages, config, runtime, False)
        if is_empty(ai):
            raise EmptyReply(label, streamed=True)
        stop_streaming(
            model, why="its streamed reply was empty, asked without streaming it answered"
        )
        return ai

    def add(self, chunk: AIMessage) -> None:
        self.message_id = self.message_id or chunk.id
        if reasoning := reasoning_of(chunk.additional_kwargs, chunk.content):
            self._emit("reasoning", reasoning, chunk.id)
        if text := text_of(chunk.content):
            for kind, piece in self._think.feed(text):
                self._emit(kind, piece, chunk.id)
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

    def retried(self, attempt: int, max_retries: int, delay: float, reason: str) -> None:
        self.write(
            ev.ModelRetried(
                thread_id=self.thread_id,
                attempt=attempt,
                max_retries=max_retries,
                delay_s=delay,
                reason=reason,
                message_id=self.message_id,
            )
        )

    def flush(self) -> None:
        for kind, piece in self._think.flush():
            self._emit(kind, piece, self.message_id)

    def _emit(self, part: Literal["text", "reasoning"], text: str, message_id: str | None) -> None:
        message_id = message_id or self.message_id
        if part != self._part:
            self.start_part(part, message_id)
        delta = ev.TextDelta if part == "text" else ev.ReasoningDelta
        self.write(delta.trusted(thread_id=self.thread_id, text=text, message_id=message_id))

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
    """Ask this model without streaming from now on (logged once, with why)."""
    inner = _unwrap(model)
    where = getattr(inner, "openai_api_base", None)
    if why is None:
        why = (
            f"the model server{f' at {where}' if where else ''} answered a streaming request without streaming"
            if hasattr(inner, "openai_api_base") or hasattr(inner, "base_url")
            else f"{type(inner).__name__}.stream() gave no chunks"
        )
    log.warning("%s; asking %s without streaming from now on", why, _model_label(inner))
    _NOT_STREAMING[id(inner)] = inner


def _model_label(model: Any) -> str:
    inner = _unwrap(model)
    name = getattr(inner, "model_name", None) or getattr(inner, "model", None)
    return str(name) if isinstance(name, str) and name else type(inner).__name__


def requests_usage(model: Any) -> bool:
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


def _wait(runtime: Runtime[RunContext] | None, seconds: float) -> bool:
    """Wait before a retry; True when the person pressed Stop meanwhile."""
    if (ctx := context_of(runtime)) is not None:
        return ctx.cancel.wait(seconds)
    time.sleep(seconds)
    return False
