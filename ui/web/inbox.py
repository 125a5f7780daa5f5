"""The approvals inbox: every thread waiting for a decision, oldest first."""

from __future__ import annotations

import streamlit as st

from graph import OutcomeUnknown, Runner, Session
from ui.web.approval import approval_card
from ui.web.threads import ago, open_thread


def inbox_page(session: Session, runner: Runner) -> None:
    st.header(":material/inbox: Approvals inbox")
    waiting = session.awaiting_approval()
    if not waiting:
        st.success("Nothing is waiting for a decision.")
        return
    st.caption(f"{len(waiting)} thread{'s' if len(waiting) != 1 else ''} waiting, oldest first.")
    for info in waiting:
        pending = session.pending(info.thread_id)
        with st.container(border=True):
            since = ago(info.pending_since or info.updated_at)
            badge = " · :red-badge[outcome unknown]" if isinstance(pending, OutcomeUnknown) else ""
            st.markdown(f"**{info.title}** · waiting since {since} · `{info.thread_id}`{badge}")
            if st.button("Open thread", key=f"inbox-open-{info.thread_id}"):
                open_thread(info.thread_id)
                st.rerun()
            if pending is None:
                st.caption("The request is no longer pending (decided elsewhere).")
                continue
            if approval_card(session, runner, pending, prefix=f"inbox-{info.thread_id}"):
                open_thread(info.thread_id)
                st.rerun()
