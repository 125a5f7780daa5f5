"""What the model is sent, and what becomes of its reply: the stored `AIMessage` (strict
tool-call arguments, reasoning apart, a cut-off reply marked and its calls never run),
the after_llm hooks, and the calls answered at once. Arguments that never close are
the only sign of a cut when a proxy closes a broken stream itself. Gatehouse's own
words (notices, a cut reply and its calls' errors) are never sent to the model."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, NamedTuple

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call

from gatehouse.graph.agent import doom_loop
from gatehouse.graph.agent import tool_messages as say
from gatehouse.graph.agent.call_ids import id_of
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.history import last_human_id, text_of, view_start
from gatehouse.graph.agent.message_merge import merge_messages
from gatehouse.graph.agent.prefix_memo import PrefixMemo
from gatehouse.graph.agent.reasoning import CLOSE, OPEN, drop_reasoning_blocks, split_think
from gatehouse.graph.agent.run_end import ended, ends_here, history_size, stop
from gatehouse.graph.agent.state import add_usage
from gatehouse.graph.agent.tool_call import answered_unrun
from gatehouse.graph.agent.tool_messages import not_run, sent_back
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import HookError
from gatehouse.graph.protocol.events import CUT_OFF_SOURCE
from gatehouse.graph.protocol.threads import (
    CUT_OFF_KEY,
    NOTICE_MARK,
    REASONING_KEY,
    SUMMARY_MARK,
    TOOL_STATUS_KEY,
)

CUT_OFF_KIND = CUT_OFF_SOURCE  # the run's stop_kind, and the notice's source
CUT_OFF_STOP = (
    "Stopped: the model's reply was cut off before it finished. Retry to ask the model again."
)
CUT_OFF_REASON_KEY = "gatehouse_cut_off_reason"

# Providers whose every complete reply says how it ended, and where.
FINISH_KEYS = {"openai": ("finish_reason", "status")}
# response_metadata keys and values that mean "stopped at the token limit".
LIMIT_KEYS = ("finish_reason", "stop_reason", "done_reason", "status")
LIMIT_VALUES = {"length", "max_tokens", "MAX_TOKENS", "incomplete", "max_output_tokens"}

REASONS = {
    "length": "it reached the model's output token limit (max_tokens)",
    "no_finish": "the stream ended before the reply was finished",
    "arguments": "the stream ended in the middle of a tool call's arguments",
    "reasoning": "the stream ended while the model was still thinking",
    "usage": "the stream ended without the usage report the server sends after a finished reply",
}


def is_empty(ai: AIMessage) -> bool:
    """No answer and no tool call, and not cut off but for a missing usage chunk (how
    LiteLLM streams what a server that does not stream answered)."""
    return ai.additional_kwargs.get(CUT_OFF_REASON_KEY) in (None, "usage") and not (
        text_of(ai.content).strip() or ai.tool_calls or ai.invalid_tool_calls
    )


def prompt_messages(
    system_prompt: str | None,
    view: Mapping[str, Any],
    history: Sequence[AnyMessage],
    *,
    keep_reasoning: bool,
) -> list[AnyMessage]:
    """The system text, then the history from the latest compaction summary on, without
    earlier replies' reasoning (with `keep_reasoning`: as <think> text, which every
    server reads back), Gatehouse's notices, or a cut-off reply with its calls' errors."""
    extra = (view.get("model_context") or {}).values()
    prompt = "\n\n".join(p for p in [system_prompt or "", *extra] if p)
    sent = _sent_memos[keep_reasoning](history).messages
    return [SystemMessage(prompt), *sent] if prompt else list(sent)


class _Sent(NamedTuple):
    """What is sent of a history so far, and the call ids whose answers are left out."""

    messages: tuple[AnyMessage, ...]
    unsent: frozenset[str]


def _sent_after(keep_reasoning: bool, sent: _Sent, more: Sequence[AnyMessage]) -> _Sent:
    """The fold behind `prompt_messages`: what is sent of a history, then of more."""
    messages, unsent = list(sent.messages), set(sent.unsent)
    for m in more:
        if m.additional_kwargs.get(SUMMARY_MARK):  # the model's view starts here (model_view)
            messages, unsent = [], set()
        if isinstance(m, AIMessage):
            kwargs = m.additional_kwargs
            if kwargs.get(NOTICE_MARK) or kwargs.get(CUT_OFF_KEY):  # a notice, or `is_cut_off`
                unsent = {id_of(c) for c in _all_calls(m) if c.get("id")}
                continue
            m = _without_reasoning(m, keep_reasoning)
        elif unsent and isinstance(m, ToolMessage) and m.tool_call_id in unsent:
            unsent.discard(m.tool_call_id)
            continue
        unsent.clear()
        messages.append(m)
    return _Sent(tuple(messages), frozenset(unsent))


_NOTHING_SENT = _Sent((), frozenset())
_sent_memos: dict[bool, PrefixMemo[_Sent]] = {
    keep: PrefixMemo(
        _NOTHING_SENT, partial(_sent_after, keep), seed=lambda m: (view_start(m), _NOTHING_SENT)
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
    if not keep_reasoning:
        content = drop_reasoning_blocks(content)
    elif thought and isinstance(content, str):
        content = f"<think>\n{thought}\n</think>\n\n{content}"
    if content is m.content and len(kwargs) == len(m.additional_kwargs):
        return m
    return m.model_copy(update={"additional_kwargs": kwargs, "content": content})


def is_cut_off(ai: AIMessage) -> bool:
    return bool(ai.additional_kwargs.get(CUT_OFF_KEY))


def to_message(
    chunk: AIMessage | None, *, complete: bool = True, usage_requested: bool = False
) -> AIMessage:
    """The stored reply: strict tool calls, reasoning apart, (if `complete`) a cut mark."""
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
    if complete and (
        reason := cut_reason(
            chunk.response_metadata,
            chunk.content if isinstance(chunk.content, str) else "",
            [c.get("args") for c in _raw_arguments(chunk)],
            has_usage=chunk.usage_metadata is not None,
            usage_requested=usage_requested,
        )
    ):
        kwargs[CUT_OFF_KEY] = True
        kwargs[CUT_OFF_REASON_KEY] = reason
        # Arguments that happen to parse are still not known to be the ones the model meant.
        cut = "the reply was cut off"
        invalid += [
            invalid_tool_call(name=c["name"], args=json.dumps(c["args"]), id=c["id"], error=cut)
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
    """The argument text as sent: streamed call chunks, or OpenAI-style kwargs."""
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
    """Tool-call arguments parsed strictly: LangChain's lenient parser makes a cut-off
    `{"path": "x"` a valid-looking call, which must be answered with an error."""
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
                error = None if isinstance(parsed, dict) else "not a JSON object"
            except json.JSONDecodeError as exc:
                error = str(exc)
            if error is not None:
                invalid.append(
                    invalid_tool_call(name=call["name"], args=text, id=call_id, error=error)
                )
                continue
        calls.append({**call, "id": call_id})
    for bad in invalid:
        bad["id"] = bad.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return calls, invalid


def announce(
    reply: AIMessage | None, history: list[AnyMessage], update: dict[str, Any], ends: bool
) -> None:
    """`assistant_message` for a kept `reply`, then the run's end when it `ends` here."""
    if reply is not None:
        emit(
            ev.AssistantMessage,
            message_id=reply.id,
            text=text_of(reply.content),
            tool_calls=[c["name"] for c in reply.tool_calls],
        )
    if ends:
        update.update(ended("completed", history_size(history, update["messages"])))


def after_reply(
    update: dict[str, Any],
    view: dict[str, Any],
    history: list[AnyMessage],
    ai: AIMessage,
    before: list[AnyMessage],
    deps: AgentDeps,
    stored: list[AnyMessage],
) -> dict[str, Any]:
    """The after_llm hooks on a complete reply: keep it (maybe changed), or send it back."""
    usage = add_usage(view.get("usage"), update.get("usage"))
    checked = deps.hooks.run(
        "after_llm", {**view, **update, "usage": usage, "messages": [*history, ai]}
    )
    rerun = checked.pop("rerun_llm", False)
    added = list(checked.pop("messages", []))
    if "usage" in checked:
        update["usage"] = add_usage(update.get("usage"), checked.pop("usage"))
    update.update(checked)
    if update.get("stop_reason"):
        update.setdefault("stop_kind", "stopped")
    if rerun and not update.get("stop_reason"):
        # Kept only when a hook kept it: returned it (or changed it) under its id.
        kept = [m for m in added if m.id == ai.id and not isinstance(m, RemoveMessage)][-1:]
        added = [m for m in added if m.id != ai.id]
        reason = rerun if isinstance(rerun, str) else "an after_llm hook sent the reply back"
        emit(ev.ReplyRejected, message_id=ai.id, reason=reason)
        calls = [c for m in kept if isinstance(m, AIMessage) for c in _all_calls(m)]
        unrun = [answered_unrun(c, sent_back(reason)) for c in calls]
        update["messages"] = [*before, *kept, *unrun, *added]
        update["rerun_llm"] = True
        update["run_message_id"] = last_human_id([*history, *added], view.get("run_message_id"))
        return update
    merged = merge_messages([*history, ai], [added]) if added else [*history, ai]
    found = next((m for m in reversed(merged) if m.id == ai.id), None)
    final = found if isinstance(found, AIMessage) else None
    after = merged[merged.index(final) + 1 :] if final is not None else []
    # Kept, its calls will be answered after it: nothing may come in between.
    if (
        final is not None
        and _all_calls(final)
        and any(not isinstance(m, ToolMessage) for m in after)
    ):
        raise HookError(
            "after_llm hooks added messages after a reply whose tool calls are still open; send the reply "
            "back with rerun_llm, or add nothing after it"
        )
    # The reply's text streamed before the hooks ran: a change replaces it on screen.
    new_text = None if final is None else text_of(final.content)
    if new_text != text_of(ai.content) and ai.id is not None:
        emit(ev.MessageReplaced, message_id=ai.id, text=new_text or "", removed=new_text is None)
    answers = [] if final is None else answer_now(final, history, update, deps)
    ends = final is not None and ends_here(final, update, bool(deps.hooks["on_exit"]))
    update["messages"] = [*before, ai, *added, *answers]
    update["run_message_id"] = last_human_id(merged, view.get("run_message_id"))
    announce(final, stored, update, ends)
    return update


def _all_calls(ai: AIMessage) -> list[Any]:
    return [*ai.tool_calls, *ai.invalid_tool_calls]


def answer_now(
    ai: AIMessage, history: list[AnyMessage], update: dict[str, Any], deps: AgentDeps
) -> list[ToolMessage]:
    """The reply's calls answered at once: broken or cut-off ones, the doom-loop guard's
    repeats (which may stop the run), and all of them when the run stops here."""
    if is_cut_off(ai):
        # Never tried: no tool_started / tool_finished, so marked as an error result here.
        answers = [
            say.error_result({**c, "name": c.get("name") or "unknown"}, say.cut_off(c.get("name")))
            for c in ai.invalid_tool_calls
        ]
        for answer in answers:
            answer.additional_kwargs[TOOL_STATUS_KEY] = "error"
    else:
        answers = [
            answered_unrun(c, say.not_json(c.get("name"), c.get("error"), c.get("args")))
            for c in ai.invalid_tool_calls
        ]
    calls = list(ai.tool_calls)
    threshold = deps.doom_loop_threshold
    found = [] if update.get("stop_reason") else doom_loop.repeats(history, ai, threshold)
    if (looping := next((r for r in found if r.times > threshold), None)) is not None:
        update.update(stop(doom_loop.stop_reason(looping), "stopped"))
    for repeat in [r for r in found if r.times == threshold and looping is None]:
        emit(ev.Notice, text=doom_loop.notice(repeat), source=ev.DOOM_LOOP_SOURCE)
        answers.append(answered_unrun(repeat.call, say.repeated(repeat.call["name"], repeat.times)))
        calls = [c for c in calls if c["id"] != repeat.call["id"]]
    if update.get("stop_reason"):
        # The run ends here: nothing is dispatched, so every call is answered now.
        answers += [answered_unrun(c, not_run(update["stop_reason"])) for c in calls]
    return answers


def cut_reason(
    metadata: Mapping[str, Any],
    text: str,
    raw_arguments: Sequence[str | None],
    *,
    has_usage: bool,
    usage_requested: bool,
) -> str | None:
    """Why the reply was cut off (a key of `REASONS`), or None when it looks whole."""
    if any(metadata.get(k) in LIMIT_VALUES for k in LIMIT_KEYS):
        return "length"
    keys = FINISH_KEYS.get(str(metadata.get("model_provider") or ""))
    if keys is not None and not any(metadata.get(k) for k in keys):
        return "no_finish"
    if any(incomplete_json(a) for a in raw_arguments):
        return "arguments"
    if text.rfind(OPEN) > text.rfind(CLOSE):
        return "reasoning"
    if usage_requested and not has_usage:
        return "usage"
    return None


def incomplete_json(text: str | None) -> bool:
    """`text` is the start of a JSON value that was never finished (`{"path": "a",
    "content`), not merely bad JSON (`{bad`): some ending makes it parse."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        json.loads(text)
        return False
    except json.JSONDecodeError:
        pass
    # Mismatched brackets, or balanced yet bad: not a cut.
    if (open_ := _still_open(text)) is None or open_ == (False, ""):
        return False
    in_string, closers = open_
    quote = '"' if in_string else ""
    for start in {text, text.rstrip().rstrip(",")}:
        for fill in _FILLS:
            try:
                json.loads(start + quote + fill + closers)
                return True
            except json.JSONDecodeError:
                continue
    return False


# What may be missing before the closing brackets: a key's value, a literal's rest.
_FILLS = ("", ": null", "null", "e", "ue", "rue", "se", "lse", "alse", "l", "ll", "ull", "0")


def _still_open(text: str) -> tuple[bool, str] | None:
    """(inside a string, the brackets that would close it), or None: mismatched."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    return in_string, "".join(reversed(stack))


def notice_text(reason: str, unrun_calls: int) -> str:
    note = ""
    if unrun_calls:
        note = f" Its {unrun_calls} tool call{'s were' if unrun_calls > 1 else ' was'} not run."
    advice = " Retry to ask again, or raise the model's max_tokens." if reason == "length" else ""
    why = REASONS.get(reason, REASONS["no_finish"])
    return f"The model's reply was cut off: {why}.{note}{advice}"
