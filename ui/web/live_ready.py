"""A live run is followed only once the browser has drawn the page's widgets: React
draws a widget whose code just loaded only when nothing more urgent waits, so a busy
browser never drew Stop or the input until the run ended. A session's first page during
a run is drawn as it stands, with hidden samples of the live widgets and a script that
presses a hidden button once none waits for its code; that press's run follows live."""

from __future__ import annotations

import secrets

import streamlit as st

READY = "gh-live-ready"  # session state: this browser has drawn the live view's widgets
BUTTON_KEY = "gh-live-go"
GIVE_UP_MS = 15_000  # a widget whose code never loads must not hold the live view back
SETTLE_MS = 2_000  # after a press, time for its run to set READY before another drawing presses

STYLE = "<style>.st-key-gh-live-samples { display: none; }</style>"

# Presses the hidden button once no widget waits for its code and no script runs: the
# newest drawing's script only, once (a new run stops the one going, dropping the click
# it carried, so an extra press could cost the person's). A run the server just began
# is not visible yet: SETTLE_MS after the last press. A drawing whose button is gone stops.
SCRIPT = (
    "<script>(() => {"
    "const id = 'DRAWING';"
    "const started = Date.now();"
    "const pressed = (window.ghLiveGoPressed ??= new Set());"
    "if (pressed.has(id)) return;"
    "window.ghLiveGoNewest = id;"
    "const check = () => {"
    "  if (window.ghLiveGoNewest !== id || pressed.has(id)) return;"
    "  const app = document.querySelector('[data-testid=\"stApp\"]');"
    "  const idle = !app || app.getAttribute('data-test-script-state') === 'notRunning';"
    f"  const box = document.querySelector('.st-key-{BUTTON_KEY}');"
    "  if (idle && !box) return;"
    "  const go = box && box.querySelector('button');"
    "  const waiting = document.querySelector('[data-testid=\"stSkeleton\"]');"
    f"  const settling = Date.now() - (window.ghLiveGoAt ?? 0) < {SETTLE_MS};"
    f"  if (go && idle && !settling && (!waiting || Date.now() - started > {GIVE_UP_MS})) {{"
    "    pressed.add(id); window.ghLiveGoAt = Date.now(); go.click(); return;"
    "  }"
    "  setTimeout(check, 100);"
    "};"
    "check();"
    "})();</script>"
)


def _ready() -> None:
    st.session_state[READY] = True


def live_ready() -> bool:
    """True when this script run may follow a live run; otherwise draws the samples and
    the script that asks for the live view once they are drawn."""
    if st.session_state.get(READY):
        return True
    with st.container(key="gh-live-samples"):
        st.markdown(STYLE, unsafe_allow_html=True)
        st.code("live output", language="text")
        st.button("follow the run", key=BUTTON_KEY, on_click=_ready)
    st.html(SCRIPT.replace("DRAWING", secrets.token_hex(8), 1), unsafe_allow_javascript=True)
    return False
