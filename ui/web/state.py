"""Process-wide state of the Streamlit app: one Session and one Runner per server.

Streamlit re-executes the script on every click, so anything that must outlive a
script run (open database, background runs) lives in `st.cache_resource`, keyed by
the settings that select it. Runs are started only through the `Runner`, which keeps
each run's events and where it started in the thread, so a page that attaches to a
live run draws the history without drawing the run's own messages twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import streamlit as st

from graph import Runner, Session, load_settings, open_session


@dataclass
class AppState:
    session: Session
    runner: Runner


@st.cache_resource(show_spinner=False)
def _open(db: str, workspace: str, model_factory: str) -> AppState:
    session = open_session(load_settings())
    return AppState(session=session, runner=Runner(session))


def app_state() -> AppState:
    """The Session and Runner of this server process (opened on first use)."""
    env = os.environ
    return _open(env.get("GATEHOUSE_DB", ""), env.get("GATEHOUSE_WORKSPACE", ""), env.get("GATEHOUSE_MODEL_FACTORY", ""))
