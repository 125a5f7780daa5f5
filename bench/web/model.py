"""The model the benchmark's web server answers with (GATEHOUSE_MODEL_FACTORY).

It is the offline demo model (so a gated request is answered at once, as the issue's
targets assume), plus one request for measuring streaming: `stream <nonce>` is
answered after FIRST_TOKEN_S with `reply-<nonce> …`, streamed in small chunks
CHUNK_S apart. The moment the first chunk leaves the model is appended, as a JSON
line with the wall clock, to the file named by GATEHOUSE_BENCH_TOKEN_LOG: the
harness compares it with the moment the browser shows `reply-<nonce>`. `long
<nonce>` streams the same way for LONG_CHUNKS chunks (~20 s): a reply to press Stop in.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from gatehouse.graph import DemoModel

TOKEN_LOG_ENV = "GATEHOUSE_BENCH_TOKEN_LOG"
STREAM_PREFIX = "stream "
LONG_PREFIX = "long "
FIRST_TOKEN_S = 0.5
CHUNK_S = 0.05
CHUNKS = 30
LONG_CHUNKS = 400


def reply_marker(nonce: str) -> str:
    return f"reply-{nonce}"


class BenchModel(DemoModel):
    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        last = messages[-1] if messages else None
        text = str(last.content).strip() if isinstance(last, HumanMessage) else ""
        prefix = next((p for p in (STREAM_PREFIX, LONG_PREFIX) if text.startswith(p)), None)
        if prefix is None:
            yield from super()._stream(messages, stop, run_manager, **kwargs)
            return
        nonce = text[len(prefix) :].strip()
        time.sleep(FIRST_TOKEN_S)
        count = CHUNKS if prefix == STREAM_PREFIX else LONG_CHUNKS
        pieces = [f"{reply_marker(nonce)} "] + [f"token{i} " for i in range(1, count)]
        for i, piece in enumerate(pieces):
            if i == 0:
                _log_first_token(nonce)
            else:
                time.sleep(CHUNK_S)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


def _log_first_token(nonce: str) -> None:
    path = os.environ.get(TOKEN_LOG_ENV)
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"nonce": nonce, "first_token": time.time()}) + "\n")


def make_model() -> BenchModel:
    return BenchModel()
