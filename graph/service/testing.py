"""Deterministic chat models for tests, benchmarks and examples.

`ScriptedModel` answers from a script instead of a network: turn k of the
conversation (the k-th AI message) gets `script[k]`, so the same thread gives the
same answers in any process, on resume and after a crash. Text streams in small
chunks and tool calls arrive as streamed tool-call chunks, like a real provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

Reply = AIMessage | str | Callable[[list[BaseMessage]], AIMessage | str]


def tool_call(name: str, args: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def ai(text: str = "", *calls: dict[str, Any]) -> AIMessage:
    """An AI reply with optional tool calls (see `tool_call`)."""
    return AIMessage(content=text, tool_calls=list(calls))


class ScriptedModel(BaseChatModel):
    script: list[Any] = Field(default_factory=list)
    # Used when the script is shorter than the conversation.
    fallback: str = "Done."
    chunk_chars: int = 4
    usage: bool = True
    _inputs: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def inputs(self) -> list[list[BaseMessage]]:
        """Every message list this model was called with, in order (this process)."""
        return self._inputs

    @property
    def _llm_type(self) -> str:
        return "gatehouse-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        item: Reply = self.script[turn] if turn < len(self.script) else self.fallback
        if callable(item) and not isinstance(item, AIMessage):
            item = item(messages)
        return AIMessage(content=item) if isinstance(item, str) else item

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        chunks = list(self._stream(messages, stop, None, **kwargs))
        merged = chunks[0].message
        for c in chunks[1:]:
            merged = merged + c.message
        merged = cast(AIMessageChunk, merged)  # _stream yields AIMessageChunks only
        msg = AIMessage(
            content=merged.content,
            tool_calls=merged.tool_calls,
            usage_metadata=merged.usage_metadata,
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        self._inputs.append(list(messages))
        reply = self._reply(messages)
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        pieces = [
            text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)
        ] or [""]
        for piece in pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager and piece:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        for index, call in enumerate(reply.tool_calls):
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "name": call["name"],
                            "args": json.dumps(call["args"]),
                            "id": call["id"],
                            "index": index,
                            "type": "tool_call_chunk",
                        }
                    ],
                )
            )
        for index, bad in enumerate(reply.invalid_tool_calls, start=len(reply.tool_calls)):
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "name": bad.get("name"),
                            "args": bad.get("args"),
                            "id": bad.get("id"),
                            "index": index,
                            "type": "tool_call_chunk",
                        }
                    ],
                )
            )
        if self.usage:
            prompt = sum(len(str(m.content)) for m in messages) // 4 + 1
            out = len(text) // 4 + 1
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    usage_metadata={
                        "input_tokens": prompt,
                        "output_tokens": out,
                        "total_tokens": prompt + out,
                    },
                )
            )
