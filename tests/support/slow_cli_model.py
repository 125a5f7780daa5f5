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

from graph import ScriptedModel

CHUNK_DELAY_S = 0.1
SLOW_REPLY = "Thinking slowly about that. " + "Still going… " * 60


class SlowModel(ScriptedModel):
    delay_s: float = CHUNK_DELAY_S

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for chunk in super()._stream(messages, stop, run_manager, **kwargs):
            yield chunk
            time.sleep(self.delay_s)


def model() -> SlowModel:
    return SlowModel(fallback=SLOW_REPLY, chunk_chars=8)
