"""The live view of a running run, from the Runner's event buffer; when it ends the
caller redraws the region from the checkpoints in the same script run."""

from __future__ import annotations

import time
from typing import Any, assert_never

import streamlit as st

from graph import Run, Runner
from graph.protocol import events as ev
from ui.web.safe_text import markdown
from ui.web.thinking import LiveThinking
from ui.web.tool_blocks import NOT_RUN_STATUSES, ToolBlock, not_run_row

# Every update makes the browser draw the page again: text at 10 frames a second, a
# command's output twice a second, the elapsed time once (see also ui/web/live_ready.py).
FLUSH_EVERY = 0.1
OUTPUT_EVERY = 0.5
HEARTBEAT_EVERY = 1.0


def durations(runner: Runner, thread_id: str) -> dict[str, float]:
    """Tool durations known from this process's runs (checkpoints do not keep them)."""
    events = run.events if (run := runner.latest(thread_id)) else []
    return {e.call_id: e.duration_ms for e in events if isinstance(e, ev.ToolFinished)}


class LiveView:
    def __init__(self) -> None:
        self.text = ""
        self.slot: Any = None
        self.text_dirty = False
        self.message_id: str | None = None  # the reply whose text the slot shows
        # Replies already drawn, by id: an after_llm hook may still replace one.
        self.drawn: dict[str, Any] = {}
        self.tools: dict[str, ToolBlock] = {}
        self.thinking: LiveThinking | None = None

    def feed(self, event: ev.Event) -> None:
        match event:
            case ev.TextDelta():
                if self.slot is None:
                    self.slot = st.empty()
                self.message_id = event.message_id or self.message_id
                self.text += event.text
                self.text_dirty = True
            case ev.MessageReplaced() | ev.ReplyRejected() | ev.ModelRetried():
                self._replace(event)
            case ev.ReasoningDelta():
                self.thinking = self.thinking or LiveThinking()
                self.thinking.add(event)
            case ev.ToolStarted():
                self._close_text()
                self.thinking = None  # the next reply's reasoning gets its own block
                name = (
                    f"{event.name} · auto-approved"
                    if event.auto_approved
                    else f"{event.name} · always allowed ({event.grant})"
                    if event.grant
                    else event.name
                )
                self.tools[event.call_id] = ToolBlock(name, event.args, event.name)
            case ev.ToolOutput():
                if (block := self.tools.get(event.call_id)) is not None:
                    block.add_output(event.text)
            case ev.ToolFinished():
                block = self.tools.get(event.call_id)
                if block is None and event.status in NOT_RUN_STATUSES:
                    not_run_row(event.name, event.status, event.output)  # it never started
                else:
                    (block or ToolBlock(event.name, {})).finish(
                        event.status, event.output, event.duration_ms
                    )
            case ev.Notice():
                self._close_text()
                st.info(markdown(event.text))
            case ev.ErrorEvent():
                self._close_text()
                st.error(markdown(event.message))
            case ev.ApprovalRequired():
                self._close_text()
                st.warning("Waiting for your decision…")
            case (
                ev.RunStarted()
                | ev.PartStarted()
                | ev.AssistantMessage()
                | ev.TurnComplete()
                | ev.Usage()
                | ev.Compacted()
                | ev.RunFinished()
                | ev.Done()
            ):
                pass  # the page redraws these from the checkpoints when the run ends
            case _:
                assert_never(event)

    def flush(self, *, output: bool = True) -> None:
        """Send the text and reasoning that arrived, and unless `output` is False the output."""
        if self.thinking is not None:
            self.thinking.flush()
        if self.text_dirty and self.slot is not None:
            self.slot.markdown(markdown(self.text) + " ▌")
            self.text_dirty = False
        if output:
            for block in self.tools.values():
                block.flush()

    def _replace(self, event: ev.MessageReplaced | ev.ReplyRejected | ev.ModelRetried) -> None:
        """Show a reply's new text (an after_llm hook's redaction), or drop it (sent back,
        retried): what streamed is not what the history keeps."""
        text = event.text if isinstance(event, ev.MessageReplaced) and not event.removed else ""
        if (
            event.message_id is not None
            and event.message_id == self.message_id
            and self.slot is not None
        ):
            self.text, self.text_dirty = text, True
            if not text:  # the next text starts afresh
                self.slot.empty()
                self.slot, self.text_dirty = None, False
        elif (
            event.message_id is not None and (slot := self.drawn.get(event.message_id)) is not None
        ):
            if text:
                slot.markdown(text)
            else:
                slot.empty()

    def _close_text(self) -> None:
        if self.slot is not None:
            self.slot.markdown(markdown(self.text))
            if self.message_id is not None:
                self.drawn[self.message_id] = self.slot
        self.slot, self.text, self.text_dirty, self.message_id = None, "", False, None


def follow(run: Run) -> None:
    with st.chat_message("assistant"):
        view = LiveView()
        beat = st.empty()
        cursor = 0
        last_flush = last_output = last_beat = 0.0
        while True:
            new = run.wait(cursor, timeout=FLUSH_EVERY)
            cursor += len(new)
            for event in new:
                view.feed(event)
            now = time.monotonic()
            if now - last_flush >= FLUSH_EVERY:
                output = now - last_output >= OUTPUT_EVERY
                view.flush(output=output)
                last_flush = now
                last_output = now if output else last_output
            if now - last_beat >= HEARTBEAT_EVERY:
                # Also gives Streamlit a point to stop this script run when the person clicks.
                beat.caption(f"running · {time.time() - run.started_at:.0f} s")
                last_beat = now
            if run.done and cursor >= len(run.events):
                break
        view.flush()
        beat.empty()


def last_error(runner: Runner, thread_id: str) -> str | None:
    events = run.events if (run := runner.latest(thread_id)) else []
    errors = [e.message for e in events if isinstance(e, ev.ErrorEvent)]
    return errors[-1] if errors else None
