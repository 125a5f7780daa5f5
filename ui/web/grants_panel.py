"""The sidebar's list of the open thread's standing "always allow" grants, each with
who gave it and a Revoke button (recorded in the decision log, like the grant). The
thread's auto-approve switch (the grant "*") has its own toggle above, so it is not
listed twice."""

from __future__ import annotations

import html
import time

import streamlit as st

from graph import Session
from graph.protocol.decisions import ALL_TOOLS
from graph.protocol.operations import Revoke, RunOptions
from graph.protocol.threads import printable
from ui.web.auto_approve import tab_actor

TITLE = "Always allowed in this thread"


def grants_panel(session: Session, thread_id: str) -> None:
    grants = [g for g in session.grants(thread_id) if g.tool != ALL_TOOLS]
    if not grants:
        return
    st.caption(f"**{TITLE}** (calls these cover run without asking)")
    for g in grants:
        text, button = st.columns([3, 1], vertical_alignment="center")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(g.granted_at))
        who = f"by {g.actor or 'unknown'} via {g.source or 'unknown'}, {when}"
        text.markdown(
            f"<code>{html.escape(printable(g.label))}</code> <small>{html.escape(printable(who))}</small>",
            unsafe_allow_html=True,
        )
        button.button(
            ":material/block:",
            key=f"revoke-{thread_id}-{g.label}",
            help=f"Revoke: {g.described}",
            on_click=_revoke,
            args=(session, thread_id, g.label),
        )


def _revoke(session: Session, thread_id: str, label: str) -> None:
    try:
        session.submit(Revoke(thread_id, label), RunOptions(source="web", actor=tab_actor()))
    except Exception as exc:  # noqa: BLE001 - a readable message, never a traceback page
        st.session_state["flash"] = f"Not revoked: {exc}"
    else:
        st.session_state["flash"] = f"Revoked {printable(label)}: its calls ask again."
