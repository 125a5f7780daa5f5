"""A real LiteLLM proxy (`litellm[proxy]`) on loopback, in front of the local
OpenAI-wire server (tests/support/openai_server.py), for the proxy cases.

    with FakeOpenAI() as upstream, litellm_proxy(tmp, upstream.base_url) as proxy:
        ChatOpenAI(base_url=proxy.base_url, model="gpt-test", api_key="sk-test")

LiteLLM lives in its own environment (tests/support/litellm_proxy/, locked there):
it pins `openai<3`, `rich` and `websockets` below Gatehouse's stack, so it cannot share
Gatehouse's venv, and talking to it over HTTP is the point anyway. The first use
syncs that environment with `uv` (from the package index or uv's cache). The proxy
starts offline: the bundled model cost map (LITELLM_LOCAL_MODEL_COST_MAP), no
telemetry, no database. Readiness is its `/health/readiness` endpoint, never a sleep.

Models the proxy serves:
- `gpt-test`: the upstream server, with LiteLLM's own retries (`num_retries`);
- `mock-tools`: LiteLLM's own mock reply, a tool call (`mock_tool_calls`), upstream untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.web.server import stop_group, wait_ready
from tests.support.postgres import free_port

PROJECT = Path(__file__).resolve().parent / "litellm_proxy"
NUM_RETRIES = 2
MOCK_CALL = {
    "id": "call_mock_1",
    "type": "function",
    "function": {
        "name": "write_file",
        "arguments": json.dumps({"path": "mock.md", "content": "from litellm\n"}),
    },
}


@dataclass
class Proxy:
    base_url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def litellm_binary() -> Path:
    """The proxy's entry point, its environment synced first (fast once cached)."""
    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is needed to install the LiteLLM proxy's own environment")
    subprocess.run(
        [uv, "sync", "--frozen", "--quiet", "--project", str(PROJECT)],
        check=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
    )
    return PROJECT / ".venv" / "bin" / "litellm"


def write_config(home: Path, upstream: str) -> Path:
    # JSON is YAML: no YAML writer needed.
    config = {
        "model_list": [
            {
                "model_name": "gpt-test",
                "litellm_params": {
                    "model": "openai/gpt-test",
                    "api_base": upstream,
                    "api_key": "sk-upstream",
                },
            },
            {
                "model_name": "mock-tools",
                "litellm_params": {
                    "model": "openai/gpt-test",
                    "api_base": upstream,
                    "api_key": "sk-upstream",
                    "mock_response": "",
                    "mock_tool_calls": [MOCK_CALL],
                },
            },
        ],
        "router_settings": {"num_retries": NUM_RETRIES, "retry_after": 0},
        "litellm_settings": {"telemetry": False, "num_retries": NUM_RETRIES, "request_timeout": 30},
    }
    path = home / "litellm.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextmanager
def litellm_proxy(home: Path, upstream: str, *, timeout: float = 120) -> Iterator[Proxy]:
    binary = litellm_binary()
    port = free_port()
    log = home / "litellm.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "LITELLM_", "VIRTUAL_ENV"))
    }
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        LITELLM_LOG="ERROR",
        NO_PROXY="127.0.0.1,localhost",
        DISABLE_SCHEMA_UPDATE="True",
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(binary),
                "--config",
                str(write_config(home, upstream)),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--num_workers",
                "1",
            ],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proxy = Proxy(f"http://127.0.0.1:{port}/v1", log)
    try:
        wait_ready(
            f"http://127.0.0.1:{port}/health/readiness",
            proc,
            log,
            timeout,
            "the LiteLLM proxy",
            0.1,
        )
        yield proxy
    finally:
        stop_group(proc)
