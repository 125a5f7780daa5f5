"""The "thread not found" page: a `?thread=` id that is malformed (a NUL, control
characters, 5,000 characters) or names no thread gets this page, never a silently
created new thread."""

from __future__ import annotations

import streamlit as st

from graph import Session
from graph.protocol.threads import shown_id, thread_id_problem

NOT_FOUND = "Thread not found"


def thread_not_found_page(session: Session, thread_id: str | None) -> bool:
    """Draw the page when `thread_id` (from the URL) is not a thread; False otherwise."""
    if thread_id is None:
        return False
    problem = thread_id_problem(thread_id)
    if problem is None and session.exists(thread_id):
        return False
    st.header(f":material/search_off: {NOT_FOUND}")
    if problem is not None:
        st.error(
            f"This link's thread id is not valid: {problem.split('; this one is')[0]}. Nothing was created."
        )
    else:
        st.error(
            "There is no thread with this id in this database (deleted, or a link from another "
            "installation). Nothing was created."
        )
    # The id as text that cannot render as markup or act on the page.
    st.code(shown_id(thread_id, limit=200), language=None, wrap_lines=True)
    st.button(
        ":material/add: Start a new thread",
        key="not-found-new",
        type="primary",
        on_click=st.query_params.clear,
    )
    return True
