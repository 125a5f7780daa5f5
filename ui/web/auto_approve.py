"""Auto-approve in the web app: a person's switch is kept in their browser session and
travels with each operation (`tab_options()`); the thread's is stored, for everyone."""

from __future__ import annotations

import streamlit as st

from gatehouse.graph import DecisionError, RunInProgress, Runner, Session
from gatehouse.graph.protocol.operations import Operation, RunOptions, SetAutoApprove
from gatehouse.ui.web.identity import signed_in_identity

TAB_KEY = "auto-approve-tab"  # this browser session's mode (kept apart from the widget's state)
_WIDGET = "auto-approve-tab-toggle"


def tab_auto_approve() -> bool:
    return bool(st.session_state.get(TAB_KEY, False))


def tab_options() -> RunOptions:
    """The options of every run this browser session starts: source, actor, auto-approve."""
    return RunOptions(
        source="web", actor=signed_in_identity(), auto_approve=True if tab_auto_approve() else None
    )


def submit_from_tab(runner: Runner, operation: Operation, refused: str) -> None:
    """Submit with this tab's options; a refusal is said on the page as `refused: why`."""
    try:
        runner.submit(operation, tab_options())
    except (RunInProgress, DecisionError, ValueError) as exc:
        st.session_state["flash"] = f"{refused}: {exc}"


def tab_switch() -> None:
    # The widget's own state goes when a script run does not draw it; the mode must not.
    st.session_state[_WIDGET] = tab_auto_approve()
    st.toggle(
        ":material/bolt: Auto-approve (you, this browser)",
        key=_WIDGET,
        help="Calls that would wait for approval run without asking, in runs you start or resume from "
        "this browser session (other people's tabs are not affected). Deny rules still refuse.",
        on_change=lambda: st.session_state.__setitem__(TAB_KEY, bool(st.session_state[_WIDGET])),
    )


def thread_switch(session: Session, thread_id: str) -> None:
    key = f"auto-approve-thread-{thread_id}"
    # another tab may have flipped it
    st.session_state[key] = session.view(thread_id).auto_approve
    st.toggle(
        ":material/bolt: Auto-approve this thread",
        key=key,
        on_change=_flip_thread,
        args=(session, thread_id, key),
        help="For everyone and every front end, until turned off; recorded in the decision log.",
    )


def _flip_thread(session: Session, thread_id: str, key: str) -> None:
    try:
        session.submit(
            SetAutoApprove(thread_id, bool(st.session_state[key])),
            RunOptions(source="web", actor=signed_in_identity()),
        )
    except Exception as exc:  # noqa: BLE001 - a readable message, never a traceback page
        st.session_state["flash"] = f"Auto-approve not switched: {exc}"


def auto_approve_banner(session: Session, thread_id: str | None) -> None:
    """Say so, on every page, while calls are approved without asking."""
    where = []
    if tab_auto_approve():
        where.append("for you in this browser session")
    if thread_id is not None and session.view(thread_id).auto_approve:
        where.append("for this thread (everyone)")
    if session.auto_approve:
        where.append("for everyone (server configuration)")
    if where:
        st.warning(
            f"**Auto-approve is on** {' and '.join(where)}: calls that would wait for your approval "
            "run without asking (deny rules still refuse); each is logged as auto-approved.",
            icon=":material/bolt:",
        )
