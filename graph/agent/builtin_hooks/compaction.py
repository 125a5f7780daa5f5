"""Compaction: past a token threshold, older messages become one model-written summary.

    compaction = Compaction(summary_model, max_tokens=60_000, keep_turns=3)
    build_graph(..., hooks={"before_llm": [compaction]})

Only what the model is sent changes (history.model_view); the cut falls at the start
of a user turn (a call never loses its result)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from gatehouse.graph.agent.builtin_hooks.token_memo import count_tokens_remembered
from gatehouse.graph.agent.builtin_hooks.token_prefix import count_view, record_of
from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.history import is_summary, model_view, text_of
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.threads import SUMMARY_MARK

# Marks the request for a summary (the offline demo recognises it by this).
SUMMARY_REQUEST_MARK = "gatehouse_summary_request"
# LangGraph's tag for a model call whose tokens are not the agent's reply (Studio).
NO_STREAM_TAGS = ["nostream", "gatehouse:compaction"]
SUMMARY_PREFIX = "Summary of the earlier conversation (older messages were compacted):"
SUMMARY_INSTRUCTIONS = (
    "Summarise the conversation below for the assistant that will continue it. Keep: the "
    "user's goals and constraints, decisions made, facts learned from tools (file names, "
    "values, errors), what was done and what is still open. Be concise; no preamble."
)
TOOL_RESULT_CHARS = 2_000
# The hook's per-thread record of the view it last counted (token_prefix.py).
COUNTED = "counted"


class Compaction:
    copy_state = False  # it returns its changes: a read-only view (hook_state.py)

    def __init__(
        self,
        model: BaseChatModel | None = None,
        *,
        max_tokens: int = 60_000,
        keep_turns: int = 2,
        count_tokens: Callable[[Sequence[BaseMessage]], int] = count_tokens_approximately,
        instructions: str = SUMMARY_INSTRUCTIONS,
        name: str = "compaction",
        keep_count: bool = True,
    ) -> None:
        if keep_turns < 1:
            raise ValueError("keep_turns must be at least 1 (the current turn stays verbatim)")
        self.model = model
        self.max_tokens = max_tokens
        self.keep_turns = keep_turns
        # The default estimate, remembered per message (token_memo.py): the same number.
        self.count_tokens = (
            count_tokens_remembered if count_tokens is count_tokens_approximately else count_tokens
        )
        self.instructions = instructions
        self.name = name
        # Keep the estimate's count with the thread (~25 bytes a checkpoint; token_prefix.py).
        self.keep_count = keep_count

    def __repr__(self) -> str:
        return f"Compaction({self.name})"

    def run(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        planned, counted = self._plan(state, force=False)
        if planned or counted is None:
            return planned and planned[0]
        # Kept with the thread (token_prefix.py): the next call counts only what came after.
        return {"hook_thread": {self.name: {**self._own(state), COUNTED: counted}}}

    def compact(
        self, state: Mapping[str, Any], *, force: bool = False
    ) -> tuple[dict[str, Any], dict[str, int]] | None:
        """(the update that compacts the history, the token counts), or None: not due."""
        return self._plan(state, force=force)[0]

    def _own(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return dict((state.get("hook_thread") or {}).get(self.name) or {})

    def _plan(
        self, state: Mapping[str, Any], *, force: bool
    ) -> tuple[tuple[dict[str, Any], dict[str, int]] | None, list[Any] | None]:
        """(what `compact` returns, a new record of the count to keep, if any)."""
        messages = list(state.get("messages") or [])
        sent = list(model_view(messages))
        carried = self.keep_count and self.count_tokens is count_tokens_remembered
        counted: list[Any] | None = None
        if carried:
            kept_count = self._own(state).get(COUNTED)
            # LangChain's estimate, once, for the rest: the memo costs more in a new process.
            before, counted = count_view(sent, kept_count, count_tokens_approximately)
            if counted == kept_count:
                counted = None
        else:
            before = self.count_tokens(sent)
        if not force and before <= self.max_tokens:
            return None, counted
        cut = self.cut_index(sent)
        head, tail = sent[:cut], sent[cut:]
        if not head or (len(head) == 1 and is_summary(head[0])):
            return None, counted
        kept = messages[: len(messages) - len(sent) + cut]  # all before the tail, for the person
        summary = HumanMessage(
            content=f"{SUMMARY_PREFIX}\n\n{self.summarise(head)}",
            additional_kwargs={SUMMARY_MARK: True},
        )
        after = self.count_tokens([summary, *tail])
        counts = {"tokens_before": before, "tokens_after": after, "messages_removed": len(head)}
        emit(ev.Compacted, **counts)
        done = self._own(state)
        done["compactions"] = done.get("compactions", 0) + 1
        done.pop(COUNTED, None)
        if carried and (view_after := record_of([summary, *tail], after)) is not None:
            done[COUNTED] = view_after  # the model's view from now on
        update = {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept, summary, *tail],
            "hook_thread": {self.name: done},
        }
        return (update, counts), None

    def cut_index(self, messages: Sequence[BaseMessage]) -> int:
        """Where the last `keep_turns` user turns start, earlier if a call would lose its result."""
        starts = [
            i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not is_summary(m)
        ]
        if len(starts) < self.keep_turns:
            return 0
        cut = starts[-self.keep_turns]
        while cut > 0 and not _clean_cut(messages, cut):
            cut -= 1
        return cut

    def summarise(self, messages: Sequence[BaseMessage]) -> str:
        if self.model is None:
            raise ValueError(
                "Compaction has no model to write the summary: pass one, or let build_graph give it the agent's"
            )
        reply = self.model.invoke(
            [
                SystemMessage(self.instructions),
                HumanMessage(transcript(messages), additional_kwargs={SUMMARY_REQUEST_MARK: True}),
            ],
            {"tags": NO_STREAM_TAGS, "run_name": "gatehouse_compaction"},
        )
        return text_of(reply.content).strip() or "(no summary)"


def _clean_cut(messages: Sequence[BaseMessage], cut: int) -> bool:
    called = {
        c["id"]
        for m in messages[:cut]
        if isinstance(m, AIMessage)
        for c in [*m.tool_calls, *m.invalid_tool_calls]
    }
    answered_later = {m.tool_call_id for m in messages[cut:] if isinstance(m, ToolMessage)}
    answered_before = {m.tool_call_id for m in messages[:cut] if isinstance(m, ToolMessage)}
    return not (called & answered_later) and called <= answered_before


def transcript(messages: Sequence[BaseMessage]) -> str:
    lines: list[str] = []
    for m in messages:
        text = text_of(m.content)
        if isinstance(m, ToolMessage):
            if len(text) > TOOL_RESULT_CHARS:
                text = text[:TOOL_RESULT_CHARS] + " …"
            lines.append(f"[tool result: {m.name}] {text}")
        elif isinstance(m, AIMessage):
            if text:
                lines.append(f"[assistant] {text}")
            lines += [f"[assistant called {c['name']}] {c['args']}" for c in m.tool_calls]
        elif is_summary(m):
            lines.append(f"[earlier summary] {text}")
        else:
            lines.append(f"[{'user' if m.type == 'human' else m.type}] {text}")
    return "\n".join(lines)
