"""What a browser shows before the page is drawn (imports only Streamlit: app.py draws it
before it imports LangGraph). Icons (a font's ligatures) stay hidden until their font is
ready; a hidden button fetches the widgets' code early."""

from __future__ import annotations

from typing import Any

import streamlit as st

LOADED = "gh-page-loaded"  # session state: this browser session has drawn a page

FONT_SCRIPT = """<script>
if (!window.ghIconsWatch) {
  window.ghIconsWatch = true;
  const root = document.documentElement;
  const ready = () => root.classList.add("gh-icons-ready");
  const started = Date.now();
  const wait = () => {
    if (Date.now() - started > 3000) return ready();  // never hide icons for good
    document.fonts.load('24px "Material Symbols Rounded"').then(
      (faces) => faces.length ? ready() : setTimeout(wait, 100), () => setTimeout(wait, 100));
  };
  wait();
}
</script>"""

# Always on (ui/web/preload.py; `loading_state` for a bare `streamlit run`): icons wait
# for their font; an inbox row, text too, waits for its last button ("Open").
PAGE_STYLE = """
html:not(.gh-icons-ready) [data-testid="stIconMaterial"] { visibility: hidden; }
[class*="st-key-inbox-row-"]:not(:has([class*="st-key-inbox-open-"] button)),
[class*="st-key-inbox-row-"]:not(:has([class*="st-key-inbox-open-"] button)) * { visibility: hidden !important; }
.gh-spinner { width: 1.4rem; height: 1.4rem; border-radius: 50%; border: 0.2rem solid rgba(151, 166, 195, 0.35);
  border-top-color: rgb(255, 75, 75); animation: gh-spin 0.8s linear infinite; }
@keyframes gh-spin { to { transform: rotate(360deg); } }
"""

STYLE = (
    """<style>"""
    + PAGE_STYLE
    + """
.st-key-gh-warm-widgets { display: none; }
.gh-loading { display: flex; align-items: center; gap: 0.75rem; padding: 2rem 0; color: rgba(49, 51, 63, 0.7);
  font-size: 1.05rem; }
</style>"""
)

INDICATOR = (
    '<div class="gh-loading" role="status" aria-live="polite"><div class="gh-spinner"></div>'
    "Loading Gatehouse…</div>"
)


# Streamlit's page is blank until its code loads and the first script runs (~1.4 s on a
# busy machine): ui/web/preload.py puts this in the served HTML until a page is drawn.
BOOT_STYLE = """
#gh-boot { position: fixed; top: 0; left: 0; right: 0; display: flex; align-items: center; justify-content: center;
  gap: 0.75rem; padding: 6rem 1rem; color: rgba(49, 51, 63, 0.7); font: 1.05rem "Source Sans Pro", sans-serif;
  z-index: 999990; pointer-events: none; }
"""
BOOT_DRAWN = (
    '.gh-loading, [data-testid="stChatInput"], [data-testid="stSidebar"], '
    '[data-testid="stAlert"], [data-testid="stHeading"]'
)
BOOT_HTML = (
    '<div id="gh-boot" role="status" aria-live="polite"><div class="gh-spinner"></div>'
    "Loading Gatehouse…</div>"
    "<script>(() => {"
    f"const drawn = {BOOT_DRAWN!r};"
    "const done = () => {"
    "  const boot = document.getElementById('gh-boot');"
    "  if (!boot) return true;"
    "  if (!document.querySelector(drawn)"
    "      && document.querySelectorAll('[data-testid=\"stElementContainer\"]').length < 8) return false;"
    "  boot.remove(); return true;"
    "};"
    "if (!done()) { const watch = new MutationObserver(() => { if (done()) watch.disconnect(); });"
    "  watch.observe(document.documentElement, {childList: true, subtree: true}); }"
    "})();</script>"
)


def loading_state() -> Any:
    """The loading state (a browser session's first page only) in a slot, returned for
    `page_loaded`; later runs draw the empty slot, so positions hold."""
    st.markdown("<style>" + PAGE_STYLE + "</style>", unsafe_allow_html=True)
    slot = st.empty()
    if st.session_state.get(LOADED):
        return slot
    with slot.container():
        st.markdown(STYLE + INDICATOR, unsafe_allow_html=True)
        st.html(FONT_SCRIPT, unsafe_allow_javascript=True)
        with st.container(key="gh-warm-widgets"):
            st.button("warm", key="gh-warm-button", disabled=True)
    return slot


def page_loaded(slot: Any) -> None:
    slot.empty()
    st.session_state[LOADED] = True
