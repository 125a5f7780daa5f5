"""The chat page: persisted history, the live view of a running run, stop and retry.

History is always drawn from the thread's checkpoints, so a reload shows everything.
A live run is drawn from the Runner's event buffer: the page polls the RunHandle,
applies events to one placeholder per message and re-sends text at most
`FLUSH_EVERY` seconds apart (tokens are coalesced), then reruns when the run ends.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph import events as ev
from graph.runner import RunHandle
from graph.session import Session, message_dict
from ui.web_state import WebRunner
from ui.web_tools import ToolBlock, draw_finished, status_of_result

FLUSH_EVERY = 0.1
HEARTBEAT_EVERY = 0.5


def durations(runner: WebRunner, thread_id: str) -> dict[str, float]:
    """Tool durations known from this process's runs (checkpoints do not keep them)."""
    handle = runner.latest(thread_id)
    if handle is None:
        return {}
    return {e.call_id: e.duration_ms for e in handle.events if isinstance(e, ev.ToolFinished)}


def draw_history(
    session: Session, runner: WebRunner, thread_id: str, messages: list[BaseMessage], *, can_fork: bool
) -> None:
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    took = durations(runner, thread_id)
    i = 0
    while i < len(messages):
        m = messages[i]
        if isinstance(m, HumanMessage):
            with st.chat_message("user"):
                st.markdown(message_dict(m)["content"])
                if can_fork:
                    _fork_control(runner, thread_id, i, message_dict(m)["content"])
            i += 1
            continue
        with st.chat_message("assistant"):
            while i < len(messages) and not isinstance(messages[i], HumanMessage):
                part = messages[i]
                if isinstance(part, AIMessage):
                    _draw_ai(part, results, took)
                i += 1


def _draw_ai(m: AIMessage, results: dict[str, ToolMessage], took: dict[str, float]) -> None:
    d = message_dict(m)
    if d.get("notice"):
        st.info(d["content"], icon=":material/stop_circle:")
    elif d["content"]:
        st.markdown(d["content"])
    for call in d.get("tool_calls", []):
        result = results.get(call["id"])
        if result is None:
            draw_finished(call["name"], call["args"], None, "", None)
            continue
        d = message_dict(result)
        took_ms = took.get(call["id"], d.get("duration_ms"))
        draw_finished(call["name"], call["args"], status_of_result(d), d["content"], took_ms)


def _fork_control(runner: WebRunner, thread_id: str, index: int, text: str) -> None:
    with st.popover(":material/edit: Edit and fork", help="Edit this message and continue from here"):
        new_text = st.text_area("Message", value=text, key=f"fork-text-{thread_id}-{index}")
        sure = st.checkbox(
            "Replace this message and drop everything after it (the old branch stays in the checkpoints)",
            key=f"fork-sure-{thread_id}-{index}",
        )
        if st.button("Fork from here", key=f"fork-go-{thread_id}-{index}", disabled=not sure):
            try:
                runner.fork(thread_id, index, new_text)
            except Exception as exc:  # noqa: BLE001 - shown to the person, never a traceback page
                st.error(f"Cannot fork: {exc}")
                return
            st.rerun()


class LiveView:
    """Applies run events to placeholders inside the current chat bubble."""

    def __init__(self) -> None:
        self.text = ""
        self.slot: Any = None
        self.text_dirty = False
        self.tools: dict[str, ToolBlock] = {}

    def feed(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):
            if self.slot is None:
                self.slot = st.empty()
            self.text += event.text
            self.text_dirty = True
        elif isinstance(event, ev.ToolStarted):
            self._close_text()
            self.tools[event.call_id] = ToolBlock(event.name, event.args)
        elif isinstance(event, ev.ToolOutput):
            block = self.tools.get(event.call_id)
            if block is not None:
                block.add_output(event.text)
        elif isinstance(event, ev.ToolFinished):
            block = self.tools.get(event.call_id) or ToolBlock(event.name, {})
            block.finish(event.status, event.output, event.duration_ms)
        elif isinstance(event, ev.Notice):
            self._close_text()
            st.info(event.text)
        elif isinstance(event, ev.ErrorEvent):
            self._close_text()
            st.error(event.message)
        elif isinstance(event, ev.ApprovalRequired):
            self._close_text()
            st.warning("Waiting for your decision…")

    def flush(self) -> None:
        if self.text_dirty and self.slot is not None:
            self.slot.markdown(self.text + " ▌")
            self.text_dirty = False
        for block in self.tools.values():
            block.flush()

    def _close_text(self) -> None:
        if self.slot is not None:
            self.slot.markdown(self.text)
        self.slot, self.text, self.text_dirty = None, "", False


def follow(handle: RunHandle) -> None:
    """Draw a live run until it finishes, then rerun so history takes over."""
    with st.chat_message("assistant"):
        view = LiveView()
        beat = st.empty()
        cursor = 0
        last_flush = last_beat = 0.0
        while True:
            new = handle.wait(cursor, timeout=FLUSH_EVERY)
            cursor += len(new)
            for event in new:
                view.feed(event)
            now = time.monotonic()
            if now - last_flush >= FLUSH_EVERY:
                view.flush()
                last_flush = now
            if now - last_beat >= HEARTBEAT_EVERY:
                # Also gives Streamlit a point to stop this script run when the person clicks.
                beat.caption(f"running · {time.time() - handle.started_at:.1f} s")
                last_beat = now
            if handle.done and cursor >= len(handle.events):
                break
        view.flush()
    st.rerun()


def last_error(runner: WebRunner, thread_id: str) -> str | None:
    handle = runner.latest(thread_id)
    if handle is None:
        return None
    errors = [e.message for e in handle.events if isinstance(e, ev.ErrorEvent)]
    return errors[-1] if errors else None
