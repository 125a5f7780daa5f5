"""Auto-approve in the web app, and who this browser session is.

One Session serves every browser session of the server (ui/web/state.py), so the
Session's own auto-approve mode would switch it on for everybody. A person's switch
is kept in their browser session instead and travels with each run they start:
`tab_options()` is this tab's `RunOptions` (auto_approve, and source "web" and the
actor the decision log records), given with every operation the page submits to the
shared Runner. The thread's switch is stored with the thread (the decision log) and
holds for everyone, every front end. While either is on, a banner says so.
"""

from __future__ import annotations

import streamlit as st

from graph import Session
from graph.protocol.operations import RunOptions, SetAutoApprove
from ui.web.identity import signed_in_identity

TAB_KEY = "auto-approve-tab"  # this browser session's mode (kept apart from the widget's state)
_WIDGET = "auto-approve-tab-toggle"


def tab_auto_approve() -> bool:
    return bool(st.session_state.get(TAB_KEY, False))


def tab_actor() -> str | None:
    """Who this browser session is, for the decision log: the person the sign-in guard
    vouched for (ui/web/identity.py), never a header a client could send itself."""
    return signed_in_identity()


def tab_options() -> RunOptions:
    """The options of every run this browser session starts (`Runner.submit`): source
    "web", the signed-in person as the actor, and auto-approve while this tab's switch
    is on (otherwise the session's own mode)."""
    return RunOptions(
        source="web", actor=tab_actor(), auto_approve=True if tab_auto_approve() else None
    )


def tab_switch() -> None:
    """The sidebar switch for this browser session's auto-approve mode."""
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
    """The open thread's auto-approve switch (stored with the thread, for everyone)."""
    key = f"auto-approve-thread-{thread_id}"
    st.session_state[key] = session.thread_auto_approve(
        thread_id
    )  # another tab may have flipped it
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
            RunOptions(source="web", actor=tab_actor()),
        )
    except Exception as exc:  # noqa: BLE001 - a readable message, never a traceback page
        st.session_state["flash"] = f"Auto-approve not switched: {exc}"


def auto_approve_banner(session: Session, thread_id: str | None) -> None:
    """Say so, on every page, while calls are approved without asking."""
    where = []
    if tab_auto_approve():
        where.append("for you in this browser session")
    if thread_id is not None and session.thread_auto_approve(thread_id):
        where.append("for this thread (everyone)")
    if session.auto_approve:
        where.append("for everyone (server configuration)")
    if where:
        st.warning(
            f"**Auto-approve is on** {' and '.join(where)}: calls that would wait for your approval "
            "run without asking (deny rules still refuse); each is logged as auto-approved.",
            icon=":material/bolt:",
        )
