"""The chat model from settings: OpenAI-compatible, a LangChain provider by a prefixed
name ("anthropic:claude-…"), or the offline demo."""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from gatehouse.graph.agent.hooks import config_module
from gatehouse.graph.protocol.errors import ConfigError
from gatehouse.graph.service.config import PROVIDER_PACKAGES, Settings, model_provider
from gatehouse.graph.service.demo_model import DEMO_LABEL, DemoModel


def make_model(settings: Settings) -> BaseChatModel:
    if settings.model_factory:
        return _from_factory(settings.model_factory)
    provider, name = model_provider(settings.model)
    if provider not in (None, "openai"):
        return _from_provider(settings, provider, name)
    if settings.uses_demo_model:
        return DemoModel()
    # Imported lazily: langchain_openai is slow to import.
    from gatehouse.graph.service.openai_compat import ChatOpenAICompatible

    # "openai:gpt-4.1" too: the ChatOpenAI init_chat_model would make, plus reasoning.
    return ChatOpenAICompatible(
        model=name,
        base_url=settings.base_url,
        # Local servers (vLLM, Ollama, llama.cpp) accept any key but the client needs one.
        api_key=SecretStr(settings.api_key or "not-needed"),
        temperature=settings.temperature,
        stream_usage=settings.model_stream_usage,
        # Gatehouse retries, with an event each time; the client's would multiply them.
        max_retries=0,
        timeout=settings.model_timeout,
    )


def _from_provider(settings: Settings, provider: str, name: str) -> BaseChatModel:
    """`init_chat_model("provider:name")`; a missing package is a ConfigError naming it."""
    package = PROVIDER_PACKAGES[provider]
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise ConfigError(
            f"[model] name {settings.model!r} names a provider, which needs the packages langchain and "
            f"{package}: install them (`uv add langchain {package}` or `pip install langchain {package}`)"
        ) from None
    given = {"base_url": settings.base_url, "api_key": settings.api_key}
    kwargs: dict[str, Any] = {"temperature": settings.temperature}
    kwargs.update((k, v) for k, v in given.items() if v)
    try:
        return init_chat_model(name, model_provider=provider, **kwargs)
    except ImportError:
        raise ConfigError(
            f"[model] name {settings.model!r} needs the package {package}, which is not installed: "
            f"install it (`uv add {package}` or `pip install {package}`), or choose another model"
        ) from None
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"[model] name {settings.model!r}: {exc}") from None


def _from_factory(path: str) -> BaseChatModel:
    module_name, _, attr = path.partition(":")
    try:
        factory = getattr(importlib.import_module(config_module(module_name)), attr or "make_model")
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"model_factory {path!r} cannot be imported: {exc}") from exc
    model = factory()
    if not isinstance(model, BaseChatModel):
        raise ConfigError(
            f"model_factory {path!r} returned {type(model).__name__}, not a chat model"
        )
    return model


def describe_model(settings: Settings) -> str:
    if settings.model_factory:
        return f"custom model ({settings.model_factory})"
    provider, name = model_provider(settings.model)
    if provider not in (None, "openai"):
        return f"{name} via {provider}{f' at {settings.base_url}' if settings.base_url else ''}"
    if settings.uses_demo_model:
        return DEMO_LABEL
    return f"{name} via {settings.base_url or 'OpenAI'}"
