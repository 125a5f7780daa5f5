"""A deliberately slow scripted model for the terminal-client tests (test-only).

`gatehouse` loads it through the `GATEHOUSE_MODEL_FACTORY` setting
(`tests.support.slow_cli_model:model`): every reply streams a long text in small
chunks with a pause between them, so a test has time to press Ctrl-C mid-run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from langchain_core.outputs import ChatGenerationChunk

from gatehouse.graph import ScriptedModel

CHUNK_DELAY_S = 0.1
SLOW_REPLY = "Thinking slowly about that. " + "Still going… " * 60


class SlowModel(ScriptedModel):
    delay_s: float = CHUNK_DELAY_S

    def _stream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in super()._stream(messages, stop, run_manager, **kwargs):
            yield chunk
            time.sleep(self.delay_s)


def model() -> SlowModel:
    return SlowModel(fallback=SLOW_REPLY, chunk_chars=8)


class StuckModel(ScriptedModel):
    """A model call that does not return for a long time and cannot be interrupted
    (a provider that hangs): a cancelled run cannot reach a safe point soon."""

    def _stream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        time.sleep(60)
        yield from super()._stream(messages, stop, run_manager, **kwargs)


def stuck_model() -> StuckModel:
    return StuckModel(fallback="too late")
