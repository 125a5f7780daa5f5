"""ASGI middleware adding to Streamlit's HTML page: preload hints for the widget code
and icon font (else loaded on first use: seconds late on a busy machine), the page style
(ui/web/loading.py), and a loading indicator (`BOOT_HTML`); and Gatehouse's icon at
`…/favicon.png` (naming a page icon ran Streamlit's image code: ~0.1 s of a first page)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import streamlit

from ui.web.loading import BOOT_HTML, BOOT_STYLE, PAGE_STYLE

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ICON = Path(__file__).resolve().parent / "assets" / "icon.png"
STATIC = Path(streamlit.__file__).resolve().parent / "static" / "static"
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
    """Adds `hints()` before `</head>` of HTML pages (not encoded, not streamed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.hints = hints()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not self.hints:
            await self.app(scope, receive, send)
            return
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
            await send(message)
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


class Favicon:
    def __init__(self, app: ASGIApp, icon: Path = ICON) -> None:
        self.app = app
        self.body = icon.read_bytes()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") not in ("GET", "HEAD")
            or not scope.get("path", "").endswith("/favicon.png")
        ):
            await self.app(scope, receive, send)
            return
        headers = [
            (b"content-type", b"image/png"),
            (b"content-length", str(len(self.body)).encode()),
            (b"cache-control", b"max-age=86400"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = self.body if scope["method"] == "GET" else b""
        await send({"type": "http.response.body", "body": body})
