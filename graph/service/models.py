"""The chat model from settings: `ChatOpenAI` for any OpenAI-compatible server, or
the offline demo when neither an API key nor a base URL is configured."""

from __future__ import annotations

import importlib

from langchain_core.language_models import BaseChatModel

from graph.agent.model_call import ModelOptions
from graph.protocol.errors import ConfigError
from graph.service.config import Settings
from graph.service.demo_model import DEMO_LABEL, DemoModel


def make_model(settings: Settings) -> BaseChatModel:
    if settings.model_factory:
        return _from_factory(settings.model_factory)
    if settings.uses_demo_model:
        return DemoModel()
    # Imported lazily: langchain_openai is slow to import.
    from graph.service.openai_compat import ChatOpenAICompatible

    return ChatOpenAICompatible(
        model=settings.model,
        base_url=settings.base_url,
        # Local servers (vLLM, Ollama, llama.cpp) accept any key but the client needs one.
        api_key=settings.api_key or "not-needed",
        temperature=settings.temperature,
        stream_usage=True,
        # Gatehouse retries, with an event each time (graph/model_call.py); the client's
        # own silent retries would multiply them.
        max_retries=0,
        timeout=settings.model_timeout,
    )


def model_options(settings: Settings) -> ModelOptions:
    return ModelOptions(max_retries=settings.model_max_retries, keep_reasoning=settings.keep_reasoning)


def _from_factory(path: str) -> BaseChatModel:
    module_name, _, attr = path.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr or "make_model")
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"model_factory {path!r} cannot be imported: {exc}") from exc
    model = factory()
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"model_factory {path!r} returned {type(model).__name__}, not a chat model")
    return model


def describe_model(settings: Settings) -> str:
    if settings.model_factory:
        return f"custom model ({settings.model_factory})"
    if settings.uses_demo_model:
        return DEMO_LABEL
    where = settings.base_url or "OpenAI"
    return f"{settings.model} via {where}"
