"""Gatehouse's icon served at `…/favicon.png`, where Streamlit's page asks for one: naming
a page icon ran Streamlit's image code (numpy, PIL: ~0.1 s of the first page, issue 36)."""

from __future__ import annotations

from pathlib import Path

from ui.web.preload import ASGIApp, Receive, Scope, Send

ICON = Path(__file__).resolve().parent / "assets" / "icon.png"
PATH_END = "/favicon.png"


class Favicon:
    def __init__(self, app: ASGIApp, icon: Path = ICON) -> None:
        self.app = app
        self.body = icon.read_bytes()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
