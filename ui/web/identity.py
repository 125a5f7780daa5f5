"""Who is signed in: the identity header ui/web/guard.py signed, or with oidc `st.user`.
A page run without a valid header is refused; AppTest (no request) is trusted."""

from __future__ import annotations

from functools import lru_cache

import streamlit as st

from gatehouse.graph import (
    Access,
    ConfigError,
    install_secret,
    load_access,
    load_settings,
    oidc_problem,
    read_streamlit_secrets,
    secret_path,
    verify_identity,
)
from gatehouse.ui.web.guard import GUARD_PURPOSE, IDENTITY_HEADER

_KEY = "signed-in-identity"


@lru_cache(maxsize=1)
def web_access() -> tuple[Access, str]:
    """This install's access settings and secret (created 0600 on first use)."""
    settings = load_settings()
    access = load_access(settings.access)
    if access.web == "oidc" and (problem := oidc_problem(read_streamlit_secrets())):
        raise ConfigError(problem)
    return access, install_secret(secret_path(settings.db, access))


def signed_in() -> str | None:
    """The signed-in identity (once per browser session); None after saying why not."""
    if _KEY in st.session_state:
        return st.session_state[_KEY]
    access, secret = web_access()
    headers = st.context.headers
    if not headers:  # AppTest: no request, the trusted in-process path
        identity = load_settings().audit_actor or access.local_identity()
    elif (
        checked := verify_identity(secret, headers.get(IDENTITY_HEADER), purpose=GUARD_PURPOSE)
    ) is None:
        st.error(
            "This page was not served by Gatehouse's sign-in guard. Start the app with `gatehouse`."
        )
        return None
    elif access.web == "oidc":
        if not st.user.is_logged_in:
            st.title("Sign in to Gatehouse")
            st.write("Only signed-in people can see threads and approve tool calls.")
            st.button("Sign in", on_click=st.login, type="primary")
            return None
        identity = str(st.user.get("email") or st.user.get("name") or st.user.get("sub") or "")
        if not identity:
            st.error(
                "Your identity provider did not say who you are (no email, name or sub claim)."
            )
            return None
    else:
        identity = checked
    st.session_state[_KEY] = identity
    return identity


def signed_in_identity() -> str | None:
    """The identity `signed_in` found for this browser session (None before it ran)."""
    return st.session_state.get(_KEY)
