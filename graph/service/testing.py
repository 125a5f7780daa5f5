"""Deterministic chat models for tests, benchmarks and examples. `ScriptedModel`
answers turn k (the k-th AI message) with `script[k]`: the same answers in any
process, on resume and after a crash, streamed like a real provider's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from gatehouse.graph.protocol.threads import content_text

Reply = AIMessage | str | Callable[[list[BaseMessage]], AIMessage | str]


def tool_call(name: str, args: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def ai(text: str = "", *calls: dict[str, Any]) -> AIMessage:
    """An AI reply with optional tool calls (see `tool_call`)."""
    return AIMessage(content=text, tool_calls=list(calls))


class LocalModel(BaseChatModel):
    """A chat model whose `reply` is streamed as a provider would, usage included."""

    chunk_chars: int = 4
    usage: bool = True

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, None, **kwargs))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self.reply(messages)
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        size = self.chunk_chars
        for piece in [text[i : i + size] for i in range(0, len(text), size)] or [""]:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager and piece:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        calls: list[tuple[str | None, str | None, str | None]]
        calls = [(c["name"], json.dumps(c["args"]), c["id"]) for c in reply.tool_calls]
        calls += [(c.get("name"), c.get("args"), c.get("id")) for c in reply.invalid_tool_calls]
        for index, (name, args, call_id) in enumerate(calls):
            call = tool_call_chunk(name=name, args=args, id=call_id, index=index)
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[call]))
        if self.usage:
            prompt = sum(len(content_text(m.content)) for m in messages) // 4 + 1
            out = len(text) // 4 + 1
            usage = UsageMetadata(input_tokens=prompt, output_tokens=out, total_tokens=prompt + out)
            yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))


class ScriptedModel(LocalModel):
    script: list[Any] = Field(default_factory=list)
    # Used when the script is shorter than the conversation.
    fallback: str = "Done."
    _inputs: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def inputs(self) -> list[list[BaseMessage]]:
        return self._inputs

    @property
    def _llm_type(self) -> str:
        return "gatehouse-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        self._inputs.append(list(messages))
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        item: Reply = self.script[turn] if turn < len(self.script) else self.fallback
        if callable(item) and not isinstance(item, AIMessage):
            item = item(messages)
        return AIMessage(content=item) if isinstance(item, str) else item
