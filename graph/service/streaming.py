"""Translate LangGraph stream chunks into Gatehouse events (no printed-text parsing).

Runs are streamed with `stream_mode=["custom", "updates"]`:
- `custom` carries the typed events nodes, tools and hooks write (graph/agent/emit.py),
  the model's text deltas included;
- `updates` carries `__interrupt__` -> `ApprovalRequired`.

Not `messages`: LangGraph's handler for it scans the whole state at the start of
every node (a cost that grows with the thread), and with `messages` or `custom`
every task already runs on LangGraph's thread pool. LangGraph Server and Studio
clients may still ask for `messages`; the model's tokens arrive there as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from langgraph.types import StreamMode

from graph.protocol import events as ev
from graph.store.langgraph_private import INTERRUPT

STREAM_MODES: list[StreamMode] = ["custom", "updates"]


def translate(mode: str, chunk: Any, thread_id: str) -> Iterator[ev.Event]:
    if mode == "custom":
        # Anything else on the custom stream is a user's own writer output, not ours.
        if isinstance(chunk, ev.EVENT_TYPES):
            yield cast(ev.Event, chunk)  # EVENT_TYPES lists exactly Event's members
    elif mode == "updates" and isinstance(chunk, dict):
        for interrupt in chunk.get(INTERRUPT, ()):
            yield ev.ApprovalRequired(
                thread_id=thread_id, interrupt_id=interrupt.id, request=interrupt.value
            )
