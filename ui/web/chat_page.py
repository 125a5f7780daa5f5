"""The chat page of the web app: input, history, live run, approval card, retry."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from graph import DecisionError, Pause, Run, RunInProgress, Runner, Session
from ui.web.approval import approval_card
from ui.web.chat import draw_history, follow, last_error
from ui.web.threads import current_thread, open_thread


def _flash(message: str) -> None:
    """Show a warning now and once more after the live view reruns the page."""
    st.warning(message)
    st.session_state["flash"] = message


@dataclass(frozen=True)
class OpenThread:
    """The open thread as this script run shows it, read once: the chat input and the
    page below it must agree, and a run can end between two reads."""

    thread_id: str | None
    active: Run | None
    pending: Pause | None


def open_thread_now(session: Session, runner: Runner) -> OpenThread:
    thread_id = current_thread()
    if thread_id is None:
        return OpenThread(None, None, None)
    # The run first: one that ends after this read is followed to its end (and the page
    # reruns); one that ended before it has saved its pause for the read below.
    active = runner.active(thread_id)
    return OpenThread(thread_id, active, session.pending(thread_id) if active is None else None)


def chat_input_box(session: Session, runner: Runner, now: OpenThread) -> None:
    """The chat input; runs before the sidebar so a new thread is listed at once."""
    thread_id, pending = now.thread_id, now.pending
    if pending is not None:
        note = "Answer the approval card above first: the run is paused on it."
    else:
        note = "Message Gatehouse (try: list files, read notes.md, write todo.md: buy milk)"
    prompt = st.chat_input(note, disabled=pending is not None, key="prompt")
    if prompt:
        new_id = thread_id or session.new_thread_id()
        try:
            runner.send(new_id, prompt)
            if thread_id is None:
                open_thread(new_id)
        except RunInProgress:
            _flash("Not sent: a run is already active on this thread. Wait for it or stop it, then send again.")
        except (DecisionError, ValueError) as exc:
            _flash(f"Not sent: {exc}")
        else:
            st.rerun()  # the page below was read before this run began


def chat_page(session: Session, runner: Runner, now: OpenThread) -> None:
    """The open thread: history, then the live run, the approval card or an error."""
    thread_id, pending, active = now.thread_id, now.pending, now.active
    info = session.thread(thread_id) if thread_id else None
    st.header(info.title if info else "New thread")
    if thread_id is None:
        st.caption("Send a message to start a thread. Calls that change things wait for your approval.")
        return
    messages = session.transcript(thread_id)
    if not messages and info is None:
        st.warning(f"No thread {thread_id!r} here yet. Send a message to start it.")
    if active is not None:
        base = active.base_messages if active.base_messages is not None else len(messages)
        draw_history(session, runner, thread_id, messages[:base], can_fork=False)
        if active.user_text:
            with st.chat_message("user"):
                st.markdown(active.user_text)
        if st.button(":material/stop: Stop", key="stop", help="Stop at the next safe point"):
            runner.cancel(thread_id)
            st.toast("Stopping at the next safe point…")
        follow(active)
        return
    draw_history(session, runner, thread_id, messages, can_fork=True)
    if pending is not None:
        if approval_card(session, runner, pending):
            st.rerun()
        st.caption("Chat input is disabled until you decide on the calls above.")
        return
    if info is not None and info.status == "running":
        st.info("A run is active on this thread in another process.")
        st.button("Refresh", key="refresh")
    if info is not None and info.status in ("failed", "interrupted"):
        default = "The last run failed." if info.status == "failed" else "The last run was interrupted (its process stopped)."
        st.error(last_error(runner, thread_id) or default)
        if st.button(":material/refresh: Retry", key="retry"):
            try:
                runner.retry(thread_id)
            except RunInProgress as exc:
                st.warning(str(exc))
            st.rerun()
