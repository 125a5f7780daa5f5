"""The chat page of the web app: windowed history, live run, approval card, retry, the Stop
dock (the chat input itself: ui/web/chat_input.py).

One script run per click: every control acts in its callback (which Streamlit runs
before the script), so the run that follows draws the page as it now is; a live run
is followed in a region at the bottom (`tail`) that is redrawn in place from the
checkpoints when the run ends, without another rerun. The sidebar catches up through
the live-update poller (ui/web/live_updates.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from graph import Branches, DecisionError, Pause, Run, RunInProgress, Runner, Session, ThreadInfo
from graph.protocol.display import visible
from graph.protocol.operations import Cancel, Fork, Retry
from ui.web.approval import approval_card, show_notice
from ui.web.auto_approve import tab_options
from ui.web.history import approvals_of, draw_turn, draw_window, turns_of
from ui.web.live_ready import live_ready
from ui.web.live_run import durations, follow, last_error
from ui.web.safe_text import label, markdown
from ui.web.state import transcript
from ui.web.thinking import stopped_notes
from ui.web.threads import current_thread, open_thread
from ui.web.tool_blocks import NOT_RUN, WAITING, said_html
from ui.web.unsent import calm, keep_unsent


@dataclass(frozen=True)
class OpenThread:
    """The open thread as this script run shows it, read once: the chat input and the
    page below it must agree, and a run can end between two reads."""

    thread_id: str | None
    active: Run | None
    pending: Pause | None
    info: ThreadInfo | None = None


def open_thread_now(session: Session, runner: Runner) -> OpenThread:
    thread_id = current_thread()
    if thread_id is None:
        return OpenThread(None, None, None)
    # The run first: one that ends after this read is followed to its end; one that
    # ended before it has saved its pause for the read below.
    active = runner.active(thread_id)
    pending = session.pending(thread_id) if active is None else None
    return OpenThread(thread_id, active, pending, session.thread(thread_id))


def stop_dock(runner: Runner, now: OpenThread) -> None:
    """The Stop button above the chat input, while a run is active on the thread."""
    if now.active is not None and now.thread_id is not None:
        _stop_button(runner, now.thread_id)


def send_prompt(session: Session, runner: Runner, thread_id: str | None, text: str) -> None:
    """Send a message typed in the chat input (its callback, ui/web/chat_input.py): now,
    or queued in the thread's database while a run is active (graph/service/runner.py).
    A message the database cannot take now is kept and retried (ui/web/unsent.py)."""
    if thread_id is not None:
        st.session_state.pop(f"notice-{thread_id}", None)
    new_id = thread_id or session.new_thread_id()
    try:
        deliver(runner, new_id, text)
    except Exception as exc:  # noqa: BLE001 - storage: kept, retried by the page
        keep_unsent(new_id, text, exc)
    if thread_id is None:
        open_thread(new_id)


def deliver(runner: Runner, thread_id: str | None, text: str) -> None:
    """`Runner.send` with what a person must know said on the page; raises only what
    the database raised (the message is then not stored anywhere yet). No `thread_id`:
    a new thread, opened."""
    if thread_id is None:
        thread_id = runner.session.new_thread_id()
        open_thread(thread_id)
    try:
        runner.send(thread_id, text, tab_options())
    except RunInProgress:
        st.session_state["flash"] = (
            "Not sent yet: a run is active on this thread in another process. "
            "Your message is queued below; send it when that run ends."
        )
    except (DecisionError, ValueError) as exc:
        st.session_state["flash"] = f"Not sent: {exc}. Your message: {text}"


def _stop_button(runner: Runner, thread_id: str) -> None:
    """Stop, docked just above the chat input, where the eye is while a run goes on
    (in the page it scrolled out of view under a long turn). Drawn for every page run
    that starts with a run active: the page then follows it, and the queued runs after
    it, to their end before the rerun that draws the input without it."""
    # `st.bottom`: Streamlit's dock that holds the chat input.
    with st.bottom.container(key="gh-stop-dock"):
        dock_left, dock_right = st.columns([1, 5], vertical_alignment="center")
        dock_left.button(
            ":material/stop: Stop",
            key="stop",
            type="secondary",
            help="Stop the run now (a running command is killed)",
            on_click=calm(_stop),
            args=(runner, thread_id),
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


def _stop(runner: Runner, thread_id: str) -> None:
    runner.submit(Cancel(thread_id))


def _retry(runner: Runner, thread_id: str) -> None:
    try:
        runner.submit(Retry(thread_id), tab_options())
    except (RunInProgress, DecisionError) as exc:
        st.session_state["flash"] = f"Not retried: {exc}"


def chat_page(session: Session, runner: Runner, now: OpenThread) -> bool:
    """The open thread: the window of history, then the tail (the last turn, the live
    run, the approval card or the error). True when it followed a live run to its end
    (the input and the sidebar above were drawn before it ended)."""
    thread_id, info, active = now.thread_id, now.info, now.active
    title = info.title if info else "New thread"
    # The browser tab follows the thread, and the branch it is on (a fork of the first
    # message retitles a thread titled by it).
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
    took = durations(runner, thread_id)
    # The last turn belongs to the tail: a run (or a decision) changes it.
    tail_start = turns[-1].start if turns else 0
    branches = {b.index: b for b in session.branches(thread_id, messages)}
    draw_window(
        runner,
        thread_id,
        messages,
        turns[:-1],
        took,
        can_fork=active is None and now.pending is None,
        branches=branches,
    )
    # The tail has two slots, and a live run is drawn only in the second: the run
    # after a click (Approve, a sent message) empties the first at once, so the
    # decided card does not stay on screen (stale) for the whole run. A block that
    # replaces a block of the same type at the same place keeps its old children
    # until the script run ends, and this one lasts as long as the run.
    settled, live_slot = st.empty(), st.empty()
    if active is not None and not live_ready():
        # Drawn as it stands until the browser has drawn its widgets (ui/web/live_ready.py).
        with live_slot.container():
            _draw_live(runner, thread_id, messages, tail_start, base, took, active, branches)
        return False
    if active is not None:
        with live_slot.container():
            after = _follow_runs(session, runner, now, messages, tail_start, base, took, branches)
        # The final tail goes back to the first slot, where the next page run (the
        # rerun that redraws the input) finds it and updates it in place.
        live_slot.empty()
        thread_id, messages, took, pending, info, branches = after
    else:
        pending = now.pending
    with settled.container():
        _draw_settled(
            session, runner, thread_id, messages, tail_start, took, pending, info, branches
        )
    return active is not None


_After = tuple[str, list, dict[str, float], Pause | None, ThreadInfo | None, dict[int, Branches]]


def _follow_runs(
    session: Session,
    runner: Runner,
    now: OpenThread,
    messages: list,
    tail_start: int,
    base: int,
    took: dict[str, float],
    branches: dict[int, Branches],
) -> _After:
    """Follow the live run, then the queued messages' runs, to the end; the thread as
    they left it."""
    thread_id, active = now.thread_id, now.active
    assert thread_id is not None
    pending, info = now.pending, now.info
    while active is not None:
        # A fresh slot per live run, emptied when it ends: the final tail is drawn
        # after it (replacing a container's content in place upsets the browser's
        # delta paths when the run ends while deltas are in flight).
        live = _draw_live(
            runner, thread_id, messages, tail_start, base, took, active, branches, follows=True
        )
        live.empty()
        messages = transcript(session, thread_id)
        took = durations(runner, thread_id)
        pending = session.pending(thread_id)
        info = session.thread(thread_id)
        base = len(messages)
        branches = {b.index: b for b in session.branches(thread_id, messages)}
        # A completed run's end sends the next queued message (the Runner does it).
        active = runner.next_run(active)
    return thread_id, messages, took, pending, info, branches


def _draw_live(
    runner: Runner,
    thread_id: str,
    messages: list,
    tail_start: int,
    base: int,
    took: dict[str, float],
    active: Run,
    branches: Mapping[int, Branches],
    *,
    follows: bool = False,
) -> Any:
    """A live run in a slot of its own (returned): the tail so far, the run's progress
    (followed to its end when `follows`, else "running…") and the queue after it. The
    same shape either way: the page drawn before the browser is ready (a reload) and
    the run that follows are drawn in the same places, so no element of the first
    stays on screen beside the second (a ghost copy of the running message)."""
    live = st.empty()
    with live.container():
        _draw_running(runner, thread_id, messages, tail_start, base, took, active, branches)
        # The run's progress first, then what waits for it (filled in that order
        # on screen, though the queue is drawn before the run is followed).
        progress = st.container()
        _draw_queued(runner, thread_id, running=True)
        with progress:
            if follows:
                follow(active)
            else:
                with st.chat_message("assistant"):
                    st.caption("running…")
    return live


def _draw_running(
    runner: Runner,
    thread_id: str,
    messages: list,
    tail_start: int,
    base: int,
    took: dict[str, float],
    active: Run,
    branches: Mapping[int, Branches],
) -> None:
    """The tail of a running run as the checkpoints have it, and the message it answers."""
    _draw_part(
        runner,
        thread_id,
        messages,
        tail_start,
        base,
        took,
        can_fork=False,
        missing="running…",
        branches=branches,
    )
    if active.user_text:
        with st.chat_message("user"):
            st.markdown(said_html(active.user_text), unsafe_allow_html=True)


def _draw_settled(
    session: Session,
    runner: Runner,
    thread_id: str,
    messages: list,
    tail_start: int,
    took: dict[str, float],
    pending: Pause | None,
    info: ThreadInfo | None,
    branches: Mapping[int, Branches],
) -> None:
    """The tail with no run going: the last turn, then the card, the error or retry."""
    _draw_part(
        runner,
        thread_id,
        messages,
        tail_start,
        len(messages),
        took,
        can_fork=pending is None,
        missing=WAITING if pending is not None else NOT_RUN,
        branches=branches,
    )
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
            on_click=calm(_regenerate),
            args=(runner, thread_id, last_user, messages[last_user].content),
        )


def _regenerate(runner: Runner, thread_id: str, index: int, text: str) -> None:
    try:
        runner.submit(Fork(thread_id, index, text), tab_options())
    except (RunInProgress, DecisionError, ValueError) as exc:
        st.session_state["flash"] = f"Not regenerated: {exc}"


def _draw_part(
    runner: Runner,
    thread_id: str,
    messages: list,
    start: int,
    end: int,
    took: dict[str, float],
    *,
    can_fork: bool,
    missing: str,
    branches: Mapping[int, Branches],
) -> None:
    part = messages[start:end]
    if not part:
        return
    results = {m.tool_call_id: m for m in part if m.role == "tool"}
    approvals = approvals_of(runner, thread_id)
    for turn in turns_of(part):
        draw_turn(
            runner,
            thread_id,
            part[turn.start : turn.end],
            start + turn.start,
            results,
            took,
            can_fork=can_fork,
            missing=missing,
            branches=branches,
            approvals=approvals,
        )


def _draw_queued(runner: Runner, thread_id: str, *, running: bool, paused: bool = False) -> None:
    """The thread's queued messages under the run, as stored (they outlive a reload, Stop
    and a restart). With no run going, each says why it waits and offers "Send now"
    and "Discard": a stopped run leaves the decision to the person."""
    for message in runner.queued(thread_id):
        with st.chat_message("user"):
            st.markdown(said_html(message.text), unsafe_allow_html=True)
            if running:
                st.caption(":material/schedule: queued: sent when the run ends")
                continue
            if paused:
                st.caption(
                    ":material/schedule: queued: sent when the run your decision resumes ends"
                )
            else:
                st.caption(
                    ":material/schedule: queued, not sent: the run before it did not complete"
                )
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
            else ("The last run was interrupted (its process stopped before it finished).")
        )
        st.error(markdown(last_error(runner, thread_id) or info.reason or default))
        st.button(
            ":material/refresh: Retry", key="retry", on_click=calm(_retry), args=(runner, thread_id)
        )
    stopped_notes(session, runner, thread_id, transcript(session, thread_id), info)
