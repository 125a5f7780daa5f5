"""The settings page: model, storage, workspace, policy and usage (read-only)."""

from __future__ import annotations

import streamlit as st

from graph import Session


def settings_page(session: Session) -> None:
    info = session.info
    st.header(":material/settings: Settings")
    st.markdown(f"**Model:** {info.get('model', '?')}")
    st.caption(
        "Set OPENAI_API_KEY and/or OPENAI_BASE_URL (any OpenAI-compatible server) and "
        "GATEHOUSE_MODEL, or the [model] table of gatehouse.toml, then restart."
    )
    st.markdown(f"**Workspace folder:** `{info.get('workspace', '?')}`")
    st.markdown(f"**Database:** `{info.get('db', '?')}`")
    st.subheader("Policy")
    policy = info.get("policy")
    if isinstance(policy, str):
        st.code(policy, language="text")
    elif policy:
        st.json(policy)
    else:
        st.caption("No policy summary available.")
    st.subheader("Token usage per thread")
    rows = []
    for t in session.threads(limit=100):
        usage = session.usage(t.thread_id)
        rows.append({
            "thread": t.title,
            "input tokens": int(usage.get("input_tokens", 0)),
            "output tokens": int(usage.get("output_tokens", 0)),
            "cost ($)": usage.get("cost"),
        })
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    else:
        st.caption("No threads yet.")
