"""Gatehouse's icon as the page's favicon, served where Streamlit's page asks for one.

Streamlit's served HTML links `./favicon.png`, and its front end sets that link again
on a page that names no icon. Naming one (`st.set_page_config(page_icon=path)`) ran
Streamlit's image code on the first page of every server, which imports numpy and
PIL: ~0.1 s before anything else of the first page was drawn (issue 36). So the page
names none, and this ASGI middleware answers `…/favicon.png` with Gatehouse's icon,
a local file (a `:material/...:` page icon would be fetched from fonts.gstatic.com).
Everything else passes untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]

ICON = Path(__file__).resolve().parent / "assets" / "icon.png"
PATH_END = "/favicon.png"


class Favicon:
    def __init__(self, app: ASGIApp, icon: Path = ICON) -> None:
        self.app = app
        self.body = icon.read_bytes()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") not in ("GET", "HEAD")
            or not scope.get("path", "").endswith(PATH_END)
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
