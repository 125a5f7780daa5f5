"""`ChatOpenAI` that keeps the `reasoning_content` (or `reasoning`) vLLM, SGLang,
DeepSeek, Ollama and LM Studio send (`ChatOpenAI` drops it), in `additional_kwargs`
where LangChain's provider packages put it and graph/agent/reasoning.py reads it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from gatehouse.graph.protocol.threads import REASONING_KEY

# Field names servers use for reasoning, in the order they are looked up.
REASONING_FIELDS = ("reasoning_content", "reasoning")


def _reasoning(fields: Any) -> str:
    values = (fields.get(name) for name in REASONING_FIELDS) if isinstance(fields, dict) else ()
    return next((value for value in values if isinstance(value, str) and value), "")


class ChatOpenAICompatible(ChatOpenAI):
    def _convert_chunk_to_generation_chunk(
        self, chunk: dict, default_chunk_class: type, base_generation_info: dict | None
    ) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info
        )
        choices = chunk.get("choices") or (chunk.get("chunk") or {}).get("choices") or []
        text = _reasoning(choices[0].get("delta")) if choices else ""
        if text and generation is not None and isinstance(generation.message, AIMessageChunk):
            generation.message.additional_kwargs[REASONING_KEY] = text
        return generation

    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        data = response if isinstance(response, dict) else response.model_dump()
        for generation, choice in zip(result.generations, data.get("choices") or [], strict=False):
            if isinstance(generation.message, AIMessage) and (
                text := _reasoning(choice.get("message"))
            ):
                generation.message.additional_kwargs[REASONING_KEY] = text
        return result
