"""Settings: embedded defaults, overridden by `gatehouse.toml`, overridden by the env.
Every default works on a laptop with nothing configured: a SQLite file and a `workspace/`
folder under the current directory, the offline demo model.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from gatehouse.graph.protocol.errors import ConfigError

CONFIG_ENV = "GATEHOUSE_CONFIG"
DEFAULT_CONFIG_FILE = "gatehouse.toml"

DEFAULT_SHELL_ALLOW = [
    "ls",
    "cat",
    "pwd",
    "head",
    "tail",
    "wc",
    "git status",
    "git diff",
    "git log",
]


@dataclass(frozen=True)
class Settings:
    # Storage: a SQLite path, or a postgresql:// URL.
    db: str = ".gatehouse/gatehouse.db"
    workspace: str = "workspace"
    # Model: ChatOpenAI when an API key or base URL is set, else the offline demo.
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    system_prompt: str | None = None
    # "package.module:factory" returning any LangChain chat model (another provider,
    # a local wrapper, a scripted model in tests); wins over the OpenAI settings.
    model_factory: str | None = None
    max_model_calls: int = 25
    # [model] max_retries: Gatehouse's own retries (graph/agent/model_call.py); timeout:
    # seconds the server may stay silent (ChatOpenAI's default waits forever).
    model_max_retries: int = 2
    model_timeout: float | None = 600.0
    # [model] keep_reasoning: send earlier replies' reasoning back to the model.
    keep_reasoning: bool = False
    # [model] stream_usage: a stream that ends without its usage chunk was cut off. Off
    # for a server that never sends one.
    model_stream_usage: bool = True
    # Tools
    shell_allow: list[str] = field(default_factory=lambda: list(DEFAULT_SHELL_ALLOW))
    shell_timeout_s: float = 60.0
    # run_command's sandbox (tools/sandbox.py): "auto" (bubblewrap when it works), "require"
    # or "off"; variables passed in; paths hidden, shown read-only inside hidden ones; limits.
    shell_sandbox: str = "auto"
    shell_env: list[str] = field(default_factory=list)
    shell_hide: list[str] = field(default_factory=list)
    shell_show: list[str] = field(default_factory=list)
    shell_memory_mb: int = 4096
    shell_max_processes: int = 512
    sql_database: str | None = None
    http_allow_hosts: list[str] = field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # [compaction]: past `max_tokens` the older turns become one summary by `model` (default
    # the agent's; ignored with `model_factory`), the last `keep_turns` turns kept verbatim.
    compaction: bool = True
    compaction_model: str | None = None
    compaction_max_tokens: int = 60_000
    compaction_keep_turns: int = 2
    # [offload]: outputs over `threshold_chars` are stored aside; the model gets the first
    # `head_chars` and reads on with a tool. 0: off.
    offload_threshold_chars: int = 8_000
    offload_head_chars: int = 1_500
    # [audit]: who the decision log names when the front end knows no better.
    # `actor_header` is no longer read (a header anyone can send names nobody).
    audit_actor: str | None = None
    audit_actor_header: str | None = None
    # [access]: who may reach the web app and LangGraph Server (graph/service/access.py).
    access: dict[str, Any] = field(default_factory=dict)
    # Policy mapping (graph/agent/policy.py) and hooks by import path per point.
    policy: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, list[Any]] = field(default_factory=dict)
    # The N-th identical call in a row gets a nudge, one more stops the run (0: off);
    # how many tool calls of one turn run at once (None: no limit).
    doom_loop_threshold: int = 3
    max_parallel_tools: int | None = None
    # Sessions opened from these settings start with auto-approve on (deny still
    # refuses). Only a Session applies it, not LangGraph Server's runs.
    auto_approve: bool = False
    # [notify] (notify.py): the webhook, its signing secret, which risks / tools ping
    # (empty: all), the web app's address for links, how many tries.
    notify_webhook: str | None = None
    notify_secret: str | None = None
    notify_risks: list[str] = field(default_factory=list)
    notify_tools: list[str] = field(default_factory=list)
    notify_link: str | None = None
    notify_attempts: int = 20
    # Where the config came from (error messages, the settings page).
    source: str | None = None

    @property
    def uses_demo_model(self) -> bool:
        return not (
            self.api_key or self.base_url or self.model_factory or model_provider(self.model)[0]
        )


# Providers a model name may start with ("anthropic:claude-…"), as `init_chat_model`
# knows them, with the package each needs. "qwen3:8b" (an Ollama tag) names none.
PROVIDER_PACKAGES = {
    "openai": "langchain-openai",
    "azure_openai": "langchain-openai",
    "anthropic": "langchain-anthropic",
    "ollama": "langchain-ollama",
    "google_genai": "langchain-google-genai",
    "google_vertexai": "langchain-google-vertexai",
    "google_anthropic_vertex": "langchain-google-vertexai",
    "bedrock": "langchain-aws",
    "bedrock_converse": "langchain-aws",
    "anthropic_bedrock": "langchain-aws",
    "azure_ai": "langchain-azure-ai",
    "cohere": "langchain-cohere",
    "deepseek": "langchain-deepseek",
    "fireworks": "langchain-fireworks",
    "groq": "langchain-groq",
    "huggingface": "langchain-huggingface",
    "ibm": "langchain-ibm",
    "litellm": "langchain-litellm",
    "mistralai": "langchain-mistralai",
    "nvidia": "langchain-nvidia-ai-endpoints",
    "openrouter": "langchain-openrouter",
    "perplexity": "langchain-perplexity",
    "together": "langchain-together",
    "xai": "langchain-xai",
    "upstage": "langchain-upstage",
}


def model_provider(name: str) -> tuple[str | None, str]:
    """("anthropic", "claude-…") for "anthropic:claude-…"; (None, name) with no provider."""
    provider, sep, rest = name.partition(":")
    if sep and rest and provider.strip().lower() in PROVIDER_PACKAGES:
        return provider.strip().lower(), rest
    return None, name


_ENV = {
    "GATEHOUSE_DB": "db",
    "GATEHOUSE_WORKSPACE": "workspace",
    "GATEHOUSE_MODEL": "model",
    "GATEHOUSE_MODEL_FACTORY": "model_factory",
    "OPENAI_BASE_URL": "base_url",
    "OPENAI_API_KEY": "api_key",
    "GATEHOUSE_MAX_MODEL_CALLS": "max_model_calls",
    "GATEHOUSE_MODEL_MAX_RETRIES": "model_max_retries",
    "GATEHOUSE_MODEL_TIMEOUT": "model_timeout",
    "GATEHOUSE_SQL_DATABASE": "sql_database",
    "GATEHOUSE_SHELL_SANDBOX": "shell_sandbox",
    "GATEHOUSE_COMPACTION": "compaction",
    "GATEHOUSE_COMPACTION_MODEL": "compaction_model",
    "GATEHOUSE_COMPACTION_MAX_TOKENS": "compaction_max_tokens",
    "GATEHOUSE_OFFLOAD_THRESHOLD_CHARS": "offload_threshold_chars",
    "GATEHOUSE_ACTOR": "audit_actor",
    "GATEHOUSE_AUTO_APPROVE": "auto_approve",
    "GATEHOUSE_MAX_PARALLEL_TOOLS": "max_parallel_tools",
    "GATEHOUSE_NOTIFY_WEBHOOK": "notify_webhook",
    "GATEHOUSE_NOTIFY_SECRET": "notify_secret",
}


def load_settings(
    path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None
) -> Settings:
    env = dict(os.environ if env is None else env)
    file = Path(path or env.get(CONFIG_ENV) or DEFAULT_CONFIG_FILE)
    values: dict[str, Any] = {}
    source = None
    if file.is_file():
        try:
            data = tomllib.loads(file.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config {file}: {exc}") from exc
        values = _from_toml(data, file)
        source = str(file)
    elif path is not None or CONFIG_ENV in env:
        raise ConfigError(f"config file {file} does not exist")
    for var, key in _ENV.items():
        if env.get(var):
            values[key] = env[var]
    if "GATEHOUSE_MODEL_BASE_URL" in env:
        values["base_url"] = env["GATEHOUSE_MODEL_BASE_URL"]
    try:
        settings = absolute_locations(Settings(**values, source=source))
        if settings.shell_sandbox not in ("auto", "require", "off"):
            raise ValueError(
                f"shell_sandbox must be auto, require or off, not {settings.shell_sandbox!r}"
            )
        checked: dict[str, Any] = {
            key: None if getattr(settings, key) in _UNSET.get(key, ()) else _check(settings, key)
            for key in _CHECKS
        }
        return replace(settings, **checked)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad setting: {exc}") from exc


# Settings checked after loading, in this order: (kind, the name errors use, minimum).
_CHECKS: dict[str, tuple[type, str, float | None]] = {
    "temperature": (float, "[model] temperature", None),
    "max_model_calls": (int, "max_model_calls", None),
    "model_max_retries": (int, "[model] max_retries", 0),
    "model_timeout": (float, "[model] timeout", 0.001),
    "shell_timeout_s": (float, "[tools] shell_timeout_s", None),
    "doom_loop_threshold": (int, "doom_loop_threshold", 0),
    "max_parallel_tools": (int, "max_parallel_tools", 1),
    "auto_approve": (bool, "auto_approve", None),
    "model_stream_usage": (bool, "[model] stream_usage", None),
    "shell_memory_mb": (int, "[tools] shell_memory_mb", None),
    "shell_max_processes": (int, "[tools] shell_max_processes", None),
    "compaction": (bool, "[compaction] enabled", None),
    "compaction_max_tokens": (int, "[compaction] max_tokens", 1),
    "compaction_keep_turns": (int, "[compaction] keep_turns", 1),
    "offload_threshold_chars": (int, "[offload] threshold_chars", 0),
    "offload_head_chars": (int, "[offload] head_chars", 1),
}
# Values that mean "no limit" (None) for these settings.
_UNSET: dict[str, tuple[Any, ...]] = {
    "model_timeout": (None, ""),
    "max_parallel_tools": (None, "", 0, "0"),
}


def _check(settings: Settings, key: str) -> Any:
    kind, name, low = _CHECKS[key]
    value = getattr(settings, key)
    if kind is bool:
        return _flag(value, name)
    number = _number(kind, value, name)
    if low is not None and number < low:
        raise ValueError(f"{name} must be at least {low:g}, not {number:g}")
    return number


def absolute_locations(settings: Settings) -> Settings:
    """The settings' paths made absolute: a later change of directory keeps the files."""
    return replace(settings, **_absolute(vars(settings), Path.cwd()))


def _absolute(values: dict[str, Any], base: Path) -> dict[str, Any]:
    return {
        key: str((base / Path(value).expanduser()).resolve())
        for key in ("db", "workspace", "sql_database")
        if isinstance(value := values.get(key), str)
        and value
        and not value.startswith(":")
        and "://" not in value
        and not Path(value).is_absolute()
    }


def location_env(settings: Settings) -> dict[str, str]:
    """The environment a child process needs to use these settings from any directory."""
    settings = absolute_locations(settings)
    env = {"GATEHOUSE_DB": settings.db, "GATEHOUSE_WORKSPACE": settings.workspace}
    if settings.source:
        env[CONFIG_ENV] = str(Path(settings.source).resolve())
    return env


def _number(kind: type[int] | type[float], value: Any, name: str) -> Any:
    """`value` as `kind`; refused, not converted: a boolean, a fraction for an int, inf, NaN."""
    what = "a whole number" if kind is int else "a number"
    refused = isinstance(value, bool) or (
        kind is int and isinstance(value, float) and not value.is_integer()
    )
    try:
        number = None if refused else kind(value)
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or not math.isfinite(number):
        raise ValueError(f"{name} must be {what}, not {value!r}") from None
    return number


def _flag(value: Any, name: str) -> bool:
    """A switch from the file (a boolean) or the environment (on/off words)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}")


# [model] keys whose Settings field has another name.
_MODEL_KEYS = {
    "name": "model",
    "max_retries": "model_max_retries",
    "timeout": "model_timeout",
    "stream_usage": "model_stream_usage",
}
# Tables whose keys become `<table>_<key>` settings ([compaction] "enabled" is the switch).
_PREFIXED_TABLES = ("compaction", "offload", "audit", "notify")


def _from_toml(data: dict[str, Any], file: Path) -> dict[str, Any]:
    """The file's tables flattened (`[policy]` and `[hooks]` stay mappings)."""
    known = {f.name for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "model" and isinstance(value, dict):
            values.update({_MODEL_KEYS.get(str(k), str(k)): v for k, v in value.items()})
        elif key == "tools" and isinstance(value, dict):
            values.update(value)
        elif key == "mcp" and isinstance(value, dict):
            values["mcp_servers"] = value.get("servers", {})
        elif key in _PREFIXED_TABLES and isinstance(value, dict):
            values.update({key if k == "enabled" else f"{key}_{k}": v for k, v in value.items()})
        else:
            values[key] = value
    if unknown := set(values) - known:
        raise ConfigError(f"{file}: unknown settings {sorted(unknown)}")
    # Relative paths in the file are relative to the file, not to the cwd.
    return values | _absolute(values, file.parent)


def load_env_file(path: Path) -> None:
    """KEY=VALUE lines of a `.env` file into the environment; variables already set win."""
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(key.strip(), value)
