"""Gatehouse in the browser (served by ui/web/launch.py): what needs none of the page's
code first (loading state, styles, sign-in, a first chat input), then ui/web/page.py."""

from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run ui/web/app.py` puts ui/web/ on sys.path, not a checkout's root (a wheel's is).
_ROOT = Path(__file__).resolve().parents[2]
if (_ROOT / "gatehouse").is_dir() and str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from gatehouse.ui.web.loading import loading_state, page_loaded  # noqa: E402

# No page icon (ui/web/loading.py serves it).
st.set_page_config(page_title="Gatehouse", layout="wide")
LOADING = loading_state()

from gatehouse.ui.web.chat_input import early_chat_input  # noqa: E402
from gatehouse.ui.web.copy import COPY_SCRIPT, COPY_STYLE  # noqa: E402
from gatehouse.ui.web.identity import signed_in  # noqa: E402
from gatehouse.ui.web.serve import ACCENT  # noqa: E402

# Approve in the accent, not Streamlit's red (also under a bare `streamlit run`).
_BUTTON_COLORS = f"""
button[data-testid="stBaseButton-primary"] {{ background-color: {ACCENT}; border-color: {ACCENT}; color: #fff; }}
button[data-testid="stBaseButton-primary"]:hover {{ filter: brightness(0.9); color: #fff; }}
[class*="st-key-inbox-reject-"] button {{ color: #b3261e; border-color: #b3261e80; }}
"""
# No Streamlit "Running… Stop" (it stops the page script, not the run).
STYLE = (
    """<style>
[data-testid="stStatusWidget"] { visibility: hidden; }
details.gh-tool { margin: 0.1rem 0; }
details.gh-tool summary { cursor: pointer; }
details.gh-tool .gh-pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 20rem; overflow: auto;
  margin: 0.2rem 0 0.4rem; padding: 0.4rem 0.6rem; border-radius: 0.4rem; background: rgba(151, 166, 195, 0.12);
  font-family: "Source Code Pro", ui-monospace, monospace; font-size: 0.85rem; line-height: 1.45; }
"""
    + _BUTTON_COLORS
    + COPY_STYLE
    + "</style>"
)


def main() -> None:
    st.html(STYLE)
    st.html(COPY_SCRIPT, unsafe_allow_javascript=True)
    if signed_in() is None:
        page_loaded(LOADING)
        return
    # A server's first page: the chat input before the page's code (ui/web/chat_input.py).
    input_drawn = early_chat_input()
    from gatehouse.ui.web.page import draw_page

    draw_page(LOADING, input_drawn)


try:
    main()
except Exception as exc:  # noqa: BLE001 - Streamlit's own control flow is BaseException
    from gatehouse.ui.web.unsent import trouble_page

    trouble_page(exc)
