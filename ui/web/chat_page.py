"""The chat page: windowed history, the live run, approval card, retry, the Stop dock.
Controls act in callbacks (before the script), so a run draws the page as it now is; a
live run is followed at the bottom, then redrawn from the checkpoints in the same run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from gatehouse.graph import DecisionError, Pause, Run, RunInProgress, Runner, Session, ThreadInfo
from gatehouse.graph.protocol.display import visible
from gatehouse.graph.protocol.operations import Cancel, Fork
from gatehouse.ui.web.approval import approval_card, show_notice
from gatehouse.ui.web.auto_approve import submit_from_tab
from gatehouse.ui.web.history import Drawing, draw_turn, draw_window, turns_of
from gatehouse.ui.web.live_run import durations, follow, last_error, live_ready
from gatehouse.ui.web.safe_text import label, markdown
from gatehouse.ui.web.state import transcript
from gatehouse.ui.web.thinking import retry, stopped_notes
from gatehouse.ui.web.threads import current_thread
from gatehouse.ui.web.tool_blocks import NOT_RUN, WAITING, said_html
from gatehouse.ui.web.unsent import calm


@dataclass(frozen=True)
class OpenThread:
    """The open thread, read once per script run: the input and the page must agree."""

    thread_id: str | None
    active: Run | None
    pending: Pause | None
    info: ThreadInfo | None = None


def open_thread_now(session: Session, runner: Runner) -> OpenThread:
    thread_id = current_thread()
    if thread_id is None:
        return OpenThread(None, None, None)
    # The run first: one that ended before this read has saved its pause for the next.
    active = runner.active(thread_id)
    view = session.view(thread_id)
    return OpenThread(thread_id, active, view.pending if active is None else None, view.info)


def stop_dock(runner: Runner, now: OpenThread) -> None:
    """Stop, while a run is active, docked above the chat input (`st.bottom`), in view."""
    thread_id = now.thread_id
    if now.active is None or thread_id is None:
        return
    with st.bottom.container(key="gh-stop-dock"):
        dock_left, dock_right = st.columns([1, 5], vertical_alignment="center")
        dock_left.button(
            ":material/stop: Stop",
            key="stop",
            type="secondary",
            help="Stop the run now (a running command is killed)",
            on_click=calm(runner.submit),
            args=(Cancel(thread_id),),
        )
        waiting = len(runner.queued(thread_id))
        dock_right.caption(
            ":material/pending: running… "
            + (
                f"· {waiting} queued message{'s' if waiting != 1 else ''}, sent when it ends"
                if waiting
                else "· a message sent now is queued"
            )
        )


def chat_page(session: Session, runner: Runner, now: OpenThread) -> bool:
    """The history's window, then the tail; True when it followed a live run to its end."""
    thread_id, info, active = now.thread_id, now.info, now.active
    title = info.title if info else "New thread"
    # The browser tab follows the thread and its branch (a fork can retitle it).
    st.set_page_config(page_title=f"{visible(title)} · Gatehouse")
    st.header(label(title))
    if thread_id is None:
        st.caption(
            "Send a message to start a thread. Calls that change things wait for your approval."
        )
        return False
    messages = transcript(session, thread_id)
    if not messages and info is None and active is None:
        # The id comes from the URL: a link someone sent can put anything there.
        st.warning(f"No thread {label(repr(thread_id))} here yet. Send a message to start it.")
    base = len(messages)
    if active is not None and active.base_messages is not None:
        base = min(active.base_messages, len(messages))
    turns = turns_of(messages[:base])
    d = _drawing(session, runner, thread_id, active is None and now.pending is None)
    # The last turn belongs to the tail: a run (or a decision) changes it.
    tail_start = turns[-1].start if turns else 0
    draw_window(d, messages, turns[:-1])
    # Two slots, a live run only in the second: a click's run empties the first at once, so
    # a decided card does not stay for the whole run (a block replaced in place would).
    settled, live_slot = st.empty(), st.empty()
    pending = now.pending
    if active is not None and not live_ready():
        # Drawn as it stands until the browser has drawn its widgets (ui/web/live_run.py).
        with live_slot.container():
            _draw_live(d, messages, tail_start, base, active)
        return False
    if active is not None:
        with live_slot.container():
            d, messages, pending, info = _follow_runs(session, d, messages, tail_start, base, now)
        # The final tail goes in the first slot, where the next page run updates it in place.
        live_slot.empty()
    with settled.container():
        _draw_settled(session, d, messages, tail_start, pending, info)
    return now.active is not None


def _follow_runs(
    session: Session, d: Drawing, messages: list, tail_start: int, base: int, now: OpenThread
) -> tuple[Drawing, list, Pause | None, ThreadInfo | None]:
    """Follow the live run, then the queued messages' runs, to the end."""
    active, pending, info, thread_id = now.active, now.pending, now.info, d.thread_id
    while active is not None:
        # A fresh slot per run (replacing content in place upsets deltas still in flight).
        _draw_live(d, messages, tail_start, base, active, follows=True).empty()
        messages = transcript(session, thread_id)
        view = session.view(thread_id)
        pending, info = view.pending, view.info
        base = len(messages)
        d = _drawing(session, d.runner, thread_id, True)
        # A completed run's end sends the next queued message (the Runner does it).
        active = d.runner.next_run(active)
    return d, messages, pending, info


def _drawing(session: Session, runner: Runner, thread_id: str, can_fork: bool) -> Drawing:
    branches = {b.index: b for b in session.view(thread_id).branches}
    return Drawing(runner, thread_id, durations(runner, thread_id), branches, can_fork)


def _draw_live(
    d: Drawing, messages: list, tail_start: int, base: int, active: Run, *, follows: bool = False
) -> Any:
    """A live run in a slot of its own (returned): the tail, its message, progress (followed when
    `follows`) and the queue, the same shape either way (no ghost beside the next drawing)."""
    live = st.empty()
    with live.container():
        _draw_part(replace(d, can_fork=False, missing="running…"), messages, tail_start, base)
        if active.user_text:
            with st.chat_message("user"):
                st.markdown(said_html(active.user_text), unsafe_allow_html=True)
        progress = st.container()  # on screen above the queue, filled after it
        _draw_queued(d.runner, d.thread_id, running=True)
        with progress:
            if follows:
                follow(active)
            else:
                with st.chat_message("assistant"):
                    st.caption("running…")
    return live


def _draw_settled(
    session: Session,
    d: Drawing,
    messages: list,
    tail_start: int,
    pending: Pause | None,
    info: ThreadInfo | None,
) -> None:
    """The tail with no run going: the last turn, then the card, the error or retry."""
    missing = WAITING if pending is not None else NOT_RUN
    _draw_part(replace(d, can_fork=pending is None, missing=missing), messages, tail_start)
    runner, thread_id = d.runner, d.thread_id
    _draw_queued(runner, thread_id, running=False, paused=pending is not None)
    _tail_controls(session, runner, thread_id, info, pending)
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None
    )
    if (
        pending is None
        and last_user is not None
        and messages[-1].role == "assistant"
        and (info is None or info.status not in ("failed", "interrupted", "running"))
    ):
        st.button(
            ":material/autorenew: Regenerate the last answer",
            key="regenerate",
            type="tertiary",
            help="Ask again: the last answer is replaced (the old one stays in the checkpoints)",
            on_click=calm(submit_from_tab),
            args=(
                runner,
                Fork(thread_id, last_user, messages[last_user].content),
                "Not regenerated",
            ),
        )


def _draw_part(d: Drawing, messages: list, start: int, end: int | None = None) -> None:
    part = messages[start:end]
    results = {m.tool_call_id: m for m in part if m.role == "tool"}
    for turn in turns_of(part):
        draw_turn(d, part[turn.start : turn.end], start + turn.start, results)


def _draw_queued(runner: Runner, thread_id: str, *, running: bool, paused: bool = False) -> None:
    """The thread's queued messages (stored); with no run going, "Send now" and "Discard"."""
    for message in runner.queued(thread_id):
        with st.chat_message("user"):
            st.markdown(said_html(message.text), unsafe_allow_html=True)
            st.caption(
                ":material/schedule: queued: sent when the run ends"
                if running
                else ":material/schedule: queued: sent when the run your decision resumes ends"
                if paused
                else ":material/schedule: queued, not sent: the run before it did not complete"
            )
            if running:
                continue
            with st.container(horizontal=True, gap="small"):
                if not paused:
                    st.button(
                        ":material/send: Send now",
                        key=f"queued-send-{message.id}",
                        on_click=calm(_send_queued),
                        args=(runner, thread_id, message.id),
                    )
                st.button(
                    ":material/delete: Discard",
                    key=f"queued-discard-{message.id}",
                    type="tertiary",
                    on_click=calm(runner.discard),
                    args=(thread_id, message.id),
                )


def _send_queued(runner: Runner, thread_id: str, message_id: str) -> None:
    try:
        runner.send_queued(thread_id, message_id)
    except (RunInProgress, DecisionError, ValueError) as exc:
        st.session_state["flash"] = f"Not sent: {exc}. The message stays queued."


def _tail_controls(
    session: Session, runner: Runner, thread_id: str, info: ThreadInfo | None, pending: Pause | None
) -> None:
    show_notice(f"notice-{thread_id}")
    if pending is not None:
        approval_card(session, runner, pending)
        st.caption("Chat input is disabled until you decide on the calls above.")
        return
    if info is not None and info.status == "running":
        st.info("A run is active on this thread in another process; this page follows it.")
    if info is not None and info.status in ("failed", "interrupted"):
        default = (
            "The last run failed."
            if info.status == "failed"
            else "The last run was interrupted (its process stopped before it finished)."
        )
        st.error(markdown(last_error(runner, thread_id) or info.reason or default))
        st.button(
            ":material/refresh: Retry", key="retry", on_click=calm(retry), args=(runner, thread_id)
        )
    stopped_notes(session, runner, thread_id, transcript(session, thread_id), info)
