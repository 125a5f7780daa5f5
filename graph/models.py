"""The chat model from settings: `ChatOpenAI` for any OpenAI-compatible server, or
the offline demo when neither an API key nor a base URL is configured."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from graph.config import Settings
from graph.demo_model import DEMO_LABEL, DemoModel


def make_model(settings: Settings) -> BaseChatModel:
    if settings.uses_demo_model:
        return DemoModel()
    from langchain_openai import ChatOpenAI  # imported lazily: it is slow to import

    return ChatOpenAI(
        model=settings.model,
        base_url=settings.base_url,
        # Local servers (vLLM, Ollama, llama.cpp) accept any key but the client needs one.
        api_key=settings.api_key or "not-needed",
        temperature=settings.temperature,
        stream_usage=True,
        max_retries=2,
    )


def describe_model(settings: Settings) -> str:
    if settings.uses_demo_model:
        return DEMO_LABEL
    where = settings.base_url or "OpenAI"
    return f"{settings.model} via {where}"
