"""The chat page: persisted history, the live view of a running run, stop and retry.

History is always drawn from the thread's checkpoints, so a reload shows everything.
A live run is drawn from the Runner's event buffer: the page polls the Run,
applies events to one placeholder per message and re-sends text at most
`FLUSH_EVERY` seconds apart (tokens are coalesced), then reruns when the run ends.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from graph import MessageView, Run, Runner, Session
from graph.protocol import events as ev
from ui.web.tool_blocks import ToolBlock, draw_finished

FLUSH_EVERY = 0.1
HEARTBEAT_EVERY = 0.5


def durations(runner: Runner, thread_id: str) -> dict[str, float]:
    """Tool durations known from this process's runs (checkpoints do not keep them)."""
    run = runner.latest(thread_id)
    if run is None:
        return {}
    return {e.call_id: e.duration_ms for e in run.events if isinstance(e, ev.ToolFinished)}


def draw_history(
    session: Session, runner: Runner, thread_id: str, messages: list[MessageView], *, can_fork: bool
) -> None:
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    took = durations(runner, thread_id)
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role == "user":
            with st.chat_message("user"):
                st.markdown(m.content)
                if can_fork:
                    _fork_control(runner, thread_id, i, m.content)
            i += 1
            continue
        with st.chat_message("assistant"):
            while i < len(messages) and messages[i].role != "user":
                part = messages[i]
                if part.role == "assistant":
                    _draw_ai(part, results, took)
                i += 1


def _draw_ai(m: MessageView, results: dict[str | None, MessageView], took: dict[str, float]) -> None:
    if m.notice:
        st.info(m.content, icon=":material/stop_circle:")
    elif m.content:
        st.markdown(m.content)
    for call in m.tool_calls:
        result = results.get(call.id)
        if result is None:
            draw_finished(call.name, call.args, None, "", None)
            continue
        took_ms = took.get(call.id, result.duration_ms)
        draw_finished(call.name, call.args, result.outcome, result.content, took_ms)


def _fork_control(runner: Runner, thread_id: str, index: int, text: str) -> None:
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


def follow(run: Run) -> None:
    """Draw a live run until it finishes, then rerun so history takes over."""
    with st.chat_message("assistant"):
        view = LiveView()
        beat = st.empty()
        cursor = 0
        last_flush = last_beat = 0.0
        while True:
            new = run.wait(cursor, timeout=FLUSH_EVERY)
            cursor += len(new)
            for event in new:
                view.feed(event)
            now = time.monotonic()
            if now - last_flush >= FLUSH_EVERY:
                view.flush()
                last_flush = now
            if now - last_beat >= HEARTBEAT_EVERY:
                # Also gives Streamlit a point to stop this script run when the person clicks.
                beat.caption(f"running · {time.time() - run.started_at:.1f} s")
                last_beat = now
            if run.done and cursor >= len(run.events):
                break
        view.flush()
    st.rerun()


def last_error(runner: Runner, thread_id: str) -> str | None:
    run = runner.latest(thread_id)
    if run is None:
        return None
    errors = [e.message for e in run.events if isinstance(e, ev.ErrorEvent)]
    return errors[-1] if errors else None
