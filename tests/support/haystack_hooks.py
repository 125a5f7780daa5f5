"""Hooks written the Haystack way, loaded by import path from gatehouse.toml in
tests/test_hooks_async_forms.py: each records which of its forms ran, and on which
event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

# Every call of every BothForms instance: (method, loop id or None, thread name).
CALLS: list[tuple[str, int | None, str]] = []


def _loop_id() -> int | None:
    try:
        return id(asyncio.get_running_loop())
    except RuntimeError:
        return None


class BothForms:
    """A Haystack-style component: sync and async forms of run, warm_up and close.
    The async forms share a client opened in `warm_up_async` (an asyncio primitive
    bound to the loop it was made on), as a real one (httpx.AsyncClient) would."""

    def __init__(self) -> None:
        self.client: asyncio.Queue[int] | None = None
        self.client_loop: int | None = None

    def _log(self, name: str) -> None:
        CALLS.append((name, _loop_id(), threading.current_thread().name))

    def warm_up(self) -> None:
        self._log("warm_up")

    async def warm_up_async(self) -> None:
        self._log("warm_up_async")
        self.client, self.client_loop = asyncio.Queue(), _loop_id()

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        self._log("run")
        return {"model_context": {"form": "sync run"}}

    async def run_async(self, state: Mapping[str, Any]) -> dict[str, Any]:
        self._log("run_async")
        if self.client is None or self.client_loop != _loop_id():
            raise RuntimeError(
                "run_async runs on another loop than warm_up_async opened its client on"
            )
        await self.client.put(1)  # uses the client: fails on a loop it does not belong to
        await self.client.get()
        return {"model_context": {"form": "async run"}}

    def close(self) -> None:
        self._log("close")

    async def close_async(self) -> None:
        self._log("close_async")


class Redact:
    """An after_llm hook that redacts API keys from the model's reply in place."""

    def run(self, state: Mapping[str, Any]) -> None:
        import re

        reply = state["messages"][-1]
        if isinstance(reply.content, str):
            reply.content = re.sub(r"sk-[A-Za-z0-9]{8,}", "[redacted]", reply.content)
