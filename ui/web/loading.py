"""What a browser shows before the page is drawn (only Streamlit imported: app.py draws it
before LangGraph loads): the loading state, and middleware adding preload hints (seconds
late on a busy machine otherwise), the page style and a loading indicator to Streamlit's
HTML, and serving the icon."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
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

# Always on (`Preload`; `loading_state` for a bare `streamlit run`): icons wait
# for their font; an inbox row, text too, waits for its last button ("Open"), and shows
# Approve and Reject together or neither (a rerun's stale row was seen holding only one).
PAGE_STYLE = """
html:not(.gh-icons-ready) [data-testid="stIconMaterial"] { visibility: hidden; }
[class*="st-key-inbox-row-"]:not(:has([class*="st-key-inbox-open-"] button)),
[class*="st-key-inbox-row-"]:not(:has([class*="st-key-inbox-open-"] button)) *,
[class*="st-key-inbox-row-"]:has([class*="st-key-inbox-reject-"] button):not(:has([class*="st-key-inbox-approve-"] button)) *,
[class*="st-key-inbox-row-"]:has([class*="st-key-inbox-approve-"] button):not(:has([class*="st-key-inbox-reject-"] button)) * { visibility: hidden !important; }
.gh-spinner { width: 1.4rem; height: 1.4rem; border-radius: 50%; border: 0.2rem solid rgba(151, 166, 195, 0.35);
  border-top-color: rgb(255, 75, 75); animation: gh-spin 0.8s linear infinite; }
@keyframes gh-spin { to { transform: rotate(360deg); } }
"""

STYLE = """<style>
.st-key-gh-warm-widgets { display: none; }
.gh-loading { display: flex; align-items: center; gap: 0.75rem; padding: 2rem 0; color: rgba(49, 51, 63, 0.7);
  font-size: 1.05rem; }
</style>"""
_SPINNER = '<div class="gh-spinner"></div>Loading Gatehouse…</div>'
INDICATOR = '<div class="gh-loading" role="status" aria-live="polite">' + _SPINNER


# Streamlit's page is blank until its code loads and the first script runs (~1.4 s on a
# busy machine): `Preload` puts this in the served HTML until a page is drawn.
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
    '<div id="gh-boot" role="status" aria-live="polite">' + _SPINNER + "<script>(() => {"
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
    """The loading state (a session's first page) in a slot; later runs draw it empty (in place)."""
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


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ICON = Path(__file__).resolve().parent / "assets" / "icon.png"
STATIC = Path(st.__file__).resolve().parent / "static" / "static"
# The widgets the pages draw, whose chunks are named after them, and the Markdown
# plugins (HTML in Markdown waits for rehype-raw: text could come before its style).
WIDGETS = (
    "Button",
    "ChatInput",
    "Html",
    "Radio",
    "Checkbox",
    "TextArea",
    "TextInput",
    "DownloadButton",
    "rehype-raw",
    "remark-emoji",
)


def hints(static: Path = STATIC) -> bytes:
    links = []
    for name in WIDGETS:
        for chunk in sorted(static.glob(f"js/{name}.*.js")):
            links.append(f'<link rel="modulepreload" crossorigin href="./static/js/{chunk.name}">')
    for font in sorted(static.glob("media/MaterialSymbols-Rounded.*.woff2")):
        links.append(
            f'<link rel="preload" as="font" type="font/woff2" crossorigin href="./static/media/{font.name}">'
        )
    links.append(f'<style id="gh-page-style">{PAGE_STYLE}{BOOT_STYLE}</style>')
    return "".join(links).encode()


BODY = b"<body>"
BOOT = BODY + BOOT_HTML.encode()


class Preload:
    """Serves `…/favicon.png`; adds `hints()` to HTML pages' `<head>` (not encoded or streamed)."""

    def __init__(self, app: ASGIApp, icon: Path = ICON) -> None:
        self.app = app
        self.hints = hints()
        self.icon = icon.read_bytes()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if scope["type"] != "http" or method not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
        elif scope.get("path", "").endswith("/favicon.png"):
            headers = [
                (b"content-type", b"image/png"),
                (b"content-length", str(len(self.icon)).encode()),
                (b"cache-control", b"max-age=86400"),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            body = self.icon if method == "GET" else b""
            await send({"type": "http.response.body", "body": body})
        elif method != "GET" or not self.hints:
            await self.app(scope, receive, send)
        else:
            await self.app(scope, receive, rewriting_html(send, self._add))

    def _add(self, page: bytes) -> bytes:
        if b"</head>" not in page:
            return page
        return page.replace(b"</head>", self.hints + b"</head>", 1).replace(BODY, BOOT, 1)


def rewriting_html(send: Send, rewrite: Callable[[bytes], bytes]) -> Send:
    """`send` passing an HTML page (not encoded) through `rewrite`, its length set anew."""
    start: Message | None = None
    body: list[bytes] = []

    async def sending(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            headers = {k.lower(): v for k, v in message.get("headers", [])}
            if (
                headers.get(b"content-type", b"").startswith(b"text/html")
                and b"content-encoding" not in headers
            ):
                start = message
                return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        body.append(message.get("body", b""))
        if message.get("more_body"):
            return
        page = rewrite(b"".join(body))
        kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        kept.append((b"content-length", str(len(page)).encode()))
        await send({**start, "headers": kept})
        await send({"type": "http.response.body", "body": page})

    return sending
