"""How one tool call is drawn: a status block (running / done / failed) with its
duration, arguments, and output. Used for persisted history and for live runs."""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

OUTPUT_CHARS = 4_000

_STATE = {"ok": "complete", "responded": "complete", "error": "error", "rejected": "error", "denied": "error",
          "stopped": "error"}
_WORD = {"ok": "done", "responded": "answered by you", "error": "failed", "rejected": "rejected", "denied": "denied",
         "stopped": "stopped by you"}


def pretty(args: Any) -> str:
    return json.dumps(args, indent=2, ensure_ascii=False, default=str)


def clip(text: str) -> str:
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "\n… (truncated)"


def label(name: str, status: str | None, duration_ms: float | None) -> str:
    if status is None:
        return f":material/build: {name} · running…"
    word = _WORD.get(status, status)
    took = f" · {duration_ms / 1000:.2f} s" if duration_ms is not None else ""
    return f":material/build: {name} · {word}{took}"


class ToolBlock:
    """One tool call's status block; output is buffered and flushed by the caller."""

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        self.name = name
        self.box = st.status(label(name, None, None), state="running", expanded=True)
        with self.box:
            st.caption("arguments")
            st.code(pretty(args), language="json")
            self._out = st.empty()
        self.output = ""
        self.dirty = False

    def add_output(self, text: str) -> None:
        self.output += text
        self.dirty = True

    def flush(self) -> None:
        if self.dirty:
            self._out.code(clip(self.output), language="text")
            self.dirty = False

    def finish(self, status: str, output: str, duration_ms: float | None) -> None:
        if output:
            self.output = output
            self.dirty = True
        self.flush()
        self.box.update(
            label=label(self.name, status, duration_ms),
            state=_STATE.get(status, "complete"),  # type: ignore[arg-type]
            expanded=False,
        )


def draw_finished(name: str, args: dict[str, Any], status: str | None, output: str, duration_ms: float | None) -> None:
    """A call from the persisted thread; `status` None means it has no result yet."""
    state = "running" if status is None else _STATE.get(status, "complete")
    # Without a result the call is waiting for a decision (or its run was interrupted).
    title = f":material/pending: {name} · not run yet" if status is None else label(name, status, duration_ms)
    with st.status(title, state=state, expanded=False):  # type: ignore[arg-type]
        st.caption("arguments")
        st.code(pretty(args), language="json")
        if status is None:
            st.caption("no result yet")
        else:
            st.caption("output")
            st.code(clip(output) or "(no output)", language="text")
