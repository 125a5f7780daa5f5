"""The sidebar's extra controls for the open thread: compact now, its auto-approve
switch, its standing grants, and its decision log."""

from __future__ import annotations

import streamlit as st

from graph import Session
from ui.web.auto_approve import thread_switch
from ui.web.grants_panel import grants_panel
from ui.web.long_threads import compact_control

AUDIT_VIEW = "audit"


def thread_extras(session: Session, thread_id: str, busy: bool) -> None:
    thread_switch(session, thread_id)
    grants_panel(session, thread_id)
    compact_control(session, thread_id, busy)
    st.button(
        ":material/fact_check: Decision log",
        key=f"audit-{thread_id}",
        width="stretch",
        help="Who approved, edited or rejected which call of this thread, and when",
        on_click=_open_log,
        args=(thread_id,),
    )


def _open_log(thread_id: str) -> None:
    # Not ui.web.threads.open_thread: the sidebar (threads.py) draws this section.
    st.query_params.from_dict({"thread": thread_id, "view": AUDIT_VIEW})
