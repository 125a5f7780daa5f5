"""A slow demo model for UI tests (stop a run, a second submit while one runs).

It answers like the offline demo model but sleeps GATEHOUSE_SLOW_DELAY seconds
(default 0.15) between streamed chunks and streams in small pieces, so a run lasts
long enough to click Stop. Selected with GATEHOUSE_TEST_MODEL=tests.support.slow_model:make_model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from gatehouse.graph.service.demo_model import DemoModel


class SlowDemoModel(DemoModel):
    delay: float = 0.15

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in super()._stream(messages, stop, run_manager, **kwargs):
            time.sleep(self.delay)
            yield chunk


def make_model() -> SlowDemoModel:
    return SlowDemoModel(delay=float(os.environ.get("GATEHOUSE_SLOW_DELAY", "0.15")), chunk_chars=3)


class FlakyDemoModel(DemoModel):
    """Fails like an unreachable API on its first `failures` calls, then answers."""

    failures: int = 1

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if _FLAKY["calls"] < self.failures:
            _FLAKY["calls"] += 1
            import httpx

            raise httpx.ConnectError("connection refused (test)")
        yield from super()._stream(messages, stop, run_manager, **kwargs)


_FLAKY = {"calls": 0}


def make_flaky_model() -> FlakyDemoModel:
    _FLAKY["calls"] = 0
    return FlakyDemoModel(failures=int(os.environ.get("GATEHOUSE_FAIL_FIRST", "1")))
