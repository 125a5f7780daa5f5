"""Address checks in front of LangGraph Server (langgraph.json `"http"`), outside its
CORS (which admits any origin that gets this far; `langgraph dev` allows private-network
preflights): a foreign `Host` or `Origin` gets nothing; `/info` needs a key.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gatehouse.graph.service.access import STUDIO_ORIGIN, Access, host_name, load_access, origin_of
from gatehouse.graph.service.config import load_settings
from gatehouse.graph.service.server_auth import identity_for
from gatehouse.graph.service.server_sync import thread_sync

PNA_REQUEST = "access-control-request-private-network"
# LangGraph's routes that answer without its auth handler and say more than "up".
KEYED_OPEN_ROUTES = frozenset({"/info"})


def server_origins(access: Access) -> list[str]:
    """Studio's origin, `[access] server_origins` and `origins`."""
    named = (origin_of(o) for o in (*access.server_origins, *access.origins))
    return [STUDIO_ORIGIN, *dict.fromkeys(o for o in named if o != STUDIO_ORIGIN)]


class AddressCheck:
    """ASGI middleware: 403 for a foreign `Host` or `Origin`, HTTP and WebSocket."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.hosts = access.allowed_hosts()
        self.origins = set(server_origins(access))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Load balancers probe /ok by IP: it says only that the server is up.
        if scope["type"] in ("http", "websocket") and scope.get("path") != "/ok":
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1")
                for k, v in scope.get("headers", [])
            }
            host = headers.get("host", "")
            origin = headers.get("origin")
            if host_name(host) not in self.hosts:
                await _refuse(scope, receive, send, "this server does not answer to that address")
                return
            if (
                origin is not None
                and origin_of(origin) not in self.origins
                and origin_of(origin).partition("://")[2] != host.strip().lower()
            ):
                await _refuse(
                    scope, receive, send, "this server does not accept requests from that site"
                )
                return
            if (
                scope.get("path") in KEYED_OPEN_ROUTES
                and scope.get("method") != "OPTIONS"
                and identity_for(headers) is None
            ):
                await _refuse(scope, receive, send, "this server needs a valid key", status=401)
                return
            if origin is not None and PNA_REQUEST in headers:
                # Starlette's CORS would refuse a private-network preflight; LangGraph's answers.
                scope["headers"] = [
                    (k, v) for k, v in scope["headers"] if k.lower() != PNA_REQUEST.encode()
                ]
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, text: str, status: int = 403) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
    else:
        await PlainTextResponse(f"Gatehouse: {text}.", status)(scope, receive, send)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    # The one door's refusal (authority.py): the client learns why, with 403, not 500.
    return JSONResponse({"detail": str(exc)}, status_code=403)


# LangGraph Server keeps this app's exception handlers over its own.
app = Starlette(
    middleware=[Middleware(AddressCheck, access=load_access(load_settings().access))],
    lifespan=thread_sync,
    exception_handlers={PermissionError: _not_allowed},
)
