"""The web app's front door: ASGI middleware before Streamlit's own routes (the page,
static files, the `/_stcore/stream` WebSocket), in ui/web/launch.py. It checks `Host`
(no DNS rebinding), `Origin`, and sign-in (`[access] web`, graph/service/access.py):
- token: a one-time link (`?token=`) or the install secret opens a session
  (graph/store/web_sessions.py) in an HttpOnly, SameSite=Strict cookie named after the
  port. The cookie alone opens no WebSocket (a program on another port of this host gets
  it too): sign-in leaves HMAC(secret, session id) in the origin's localStorage, which a
  script first in the page adds to the stream's address; each message is checked again.
- proxy: the user in `proxy_user_header` with the shared secret. oidc: `st.login`.
The identity goes on in `X-Gatehouse-Identity`, signed, replacing any a client sent."""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import threading
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode

from gatehouse.graph import (
    Access,
    WebSessions,
    host_name,
    load_settings,
    origin_of,
    same_secret,
    sign_identity,
)
from gatehouse.ui.web.loading import ASGIApp, Message, Receive, Scope, Send, rewriting_html

COOKIE = "gatehouse_session"  # + "_<port>"
IDENTITY_HEADER = "x-gatehouse-identity"
SIGNIN_PATH = "/_gatehouse/signin"
WHOAMI_PATH = "/_gatehouse/whoami"
SIGNOUT_PATH = "/_gatehouse/signout"
# Answer without a sign-in (still Host- and Origin-checked): readiness probes.
OPEN_PATHS = ("/_stcore/health", "/_stcore/script-health-check")
GUARD_PURPOSE = "guard"
MAX_FORM_BYTES = 8192
# What needs the session's proof besides its cookie: the app's stream, the agent API.
PROOF_PATHS = ("/_stcore/stream", "/_stcore/agent/interact", "/_stcore/agent/mcp")
PROOF_PARAM = "gatehouse_proof"
PROOF_KEY = "gatehouse-proof"  # in the origin's localStorage
# First in the app's page, before Streamlit's code: its WebSocket carries the proof.
PROOF_SCRIPT = (
    "<script>(() => { const Native = window.WebSocket;"
    " window.WebSocket = class extends Native { constructor(url, protocols) {"
    ' const u = new URL(url, location.href); let proof = "";'
    f' try {{ proof = localStorage.getItem("{PROOF_KEY}") || ""; }} catch (e) {{}}'
    f' if (u.pathname.endsWith("/_stcore/stream")) u.searchParams.set("{PROOF_PARAM}", proof);'
    " super(u.href, protocols); } }; })();</script>"
).encode()


class OneTimeTokens:
    """Sign-in tokens for links printed at start: each works once, for this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[str] = set()

    def issue(self) -> str:
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._live.add(token)
        return token

    def redeem(self, token: str) -> bool:
        with self._lock:
            found = token in self._live
            self._live.discard(token)
        return found


TOKENS = OneTimeTokens()


class Guard:
    """ASGI middleware: Host, Origin and sign-in checks, then the signed identity header."""

    def __init__(
        self,
        app: ASGIApp,
        access: Access,
        secret: str,
        tokens: OneTimeTokens = TOKENS,
        sessions: WebSessions | None = None,
    ) -> None:
        self.app = app
        self.access = access
        self.secret = secret
        self.tokens = tokens
        if sessions is None and access.web == "token":
            sessions = WebSessions(load_settings().db)
        self.sessions = sessions
        self.hosts = access.allowed_hosts()
        self.origins = {origin_of(o) for o in access.origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if host_name(host) not in self.hosts:
            await _refuse(scope, send, 403, "Gatehouse does not answer to this address.")
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin, host):
            await _refuse(scope, send, 403, "Gatehouse does not accept requests from other sites.")
            return
        path = scope.get("path", "")
        if self.access.web == "token" and kind == "http" and path.startswith("/_gatehouse/"):
            await self._own_route(scope, receive, send, headers)
            return
        identity = self._identity(scope, headers)
        if identity is None and self.access.web != "oidc":
            if path in OPEN_PATHS:
                await self.app(scope, receive, send)
                return
            await self._signed_out(scope, send, headers)
            return
        if self.access.web == "token" and await self._stopped_signed_in(scope, send, headers):
            return
        signed = sign_identity(self.secret, identity or "", purpose=GUARD_PURPOSE)
        _drop_header(scope, IDENTITY_HEADER)
        scope["headers"] = [*scope["headers"], (IDENTITY_HEADER.encode(), signed.encode("latin-1"))]
        if self.access.web != "token":
            await self.app(scope, receive, _no_framing(send) if kind == "http" else send)
        elif kind == "http":
            if "text/html" in headers.get("accept", ""):  # a compressed page could not carry it
                _drop_header(scope, "accept-encoding")
            await self.app(scope, receive, _no_framing(rewriting_html(send, _with_proof_script)))
        else:
            await self.app(scope, self._while_signed_in(scope, headers, receive, send), send)

    async def _stopped_signed_in(self, scope: Scope, send: Send, headers: dict[str, str]) -> bool:
        """A signed-in request answered here: a sign-in link again, or the stream without proof."""
        if scope["type"] == "http" and "token" in _query(scope):
            # The link is used up all the same, and leaves the address bar.
            self.tokens.redeem(_query(scope)["token"])
            await _send(send, 200, _continue_page(_without_token(scope)), "html")
            return True
        if scope.get("path") in PROOF_PATHS and not self._proven(scope, headers):
            await _refuse(scope, send, 403, "Sign in again on this page.")
            return True
        return False

    def _proof(self, session_id: str) -> str:
        """What only a page of this origin holds for this session (its localStorage)."""
        message = b"gatehouse-port-proof\0" + session_id.encode()
        return hmac.new(self.secret.encode(), message, hashlib.sha256).hexdigest()

    def _proven(self, scope: Scope, headers: dict[str, str]) -> bool:
        session_id, given = _session_id(scope, headers), _query(scope).get(PROOF_PARAM)
        return bool(session_id and given) and hmac.compare_digest(
            str(given), self._proof(str(session_id))
        )

    def _while_signed_in(
        self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> Receive:
        """The WebSocket's messages, passed on only while its session is live."""

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive" and self._identity(scope, headers) is None:
                await send({"type": "websocket.close", "code": 1008})
                return {"type": "websocket.disconnect", "code": 1008}
            return message

        return receiving

    def _origin_ok(self, origin: str, host: str) -> bool:
        given = origin_of(origin)
        # Or the same origin: the browser's Origin names the host the request went to.
        return given in self.origins or (
            bool(given) and given.split("://", 1)[1] == host.strip().lower()
        )

    def _identity(self, scope: Scope, headers: dict[str, str]) -> str | None:
        if self.access.web == "proxy":
            if not same_secret(
                headers.get(self.access.proxy_secret_header.lower()), self.access.proxy_secret
            ):
                return None
            return (headers.get(self.access.proxy_user_header.lower()) or "").strip() or None
        if self.access.web == "token" and self.sessions is not None:
            return self.sessions.identity(_session_id(scope, headers), _port(scope))
        return None

    async def _signed_out(self, scope: Scope, send: Send, headers: dict[str, str]) -> None:
        if self.access.web == "token" and scope["type"] == "http":
            token = _query(scope).get("token")
            if token and self._token_ok(token):
                await self._sign_in(scope, send, _without_token(scope))
                return
            if scope.get("method") == "GET" and "text/html" in headers.get("accept", ""):
                await _send(send, 401, _signin_page(_without_token(scope), bool(token)), "html")
                return
        if self.access.web == "proxy":
            await _refuse(scope, send, 401, "Sign in through the proxy in front of Gatehouse.")
            return
        await _refuse(scope, send, 401, "Sign in to Gatehouse first.")

    def _token_ok(self, token: str) -> bool:
        return self.tokens.redeem(token) or same_secret(token, self.secret)

    async def _sign_in(self, scope: Scope, send: Send, next_path: str) -> None:
        assert self.sessions is not None
        port = _port(scope)
        session_id = self.sessions.open(self.access.local_identity(), port)
        cookie = f"{COOKIE}_{port}={session_id}; Path=/; Max-Age={WebSessions.MAX_AGE_S}; HttpOnly; SameSite=Strict"
        # A page, not a redirect: a navigation from another site does not send
        # SameSite=Strict cookies even after a redirect; one this page starts does.
        await _send(
            send, 200, _continue_page(next_path, self._proof(session_id)), "html", cookies=[cookie]
        )

    async def _own_route(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
    ) -> None:
        path = scope["path"]
        signed_in = self._identity(scope, headers)
        if path == WHOAMI_PATH:
            await _send(send, 200 if signed_in else 401, signed_in or "signed out")
        elif path == SIGNOUT_PATH and scope.get("method") == "POST":
            if (session_id := _session_id(scope, headers)) and self.sessions is not None:
                self.sessions.revoke(session_id)
            gone = f"{COOKIE}_{_port(scope)}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
            body = '<h1>Signed out</h1><p>This browser\'s session has ended. <a href="/">Sign in again</a>.</p>'
            await _send(send, 200, _page("Signed out · Gatehouse", body), "html", cookies=[gone])
        elif path == SIGNOUT_PATH:
            body = f"""<h1>Sign out of Gatehouse</h1><p>This browser's session on this server ends.</p>
<form method="post" action="{SIGNOUT_PATH}"><button type="submit">Sign out</button></form>"""
            await _send(send, 200, _page("Sign out · Gatehouse", body), "html")
        elif path == SIGNIN_PATH and scope.get("method") == "POST":
            if headers.get("origin") is None:
                await _send(send, 403, "Sign in from the sign-in page.")
                return
            form = dict(parse_qsl((await _read_body(receive)).decode("utf-8", "replace")))
            next_path = _safe_next(form.get("next", "/"))
            if self._token_ok(form.get("token", "").strip()):
                await self._sign_in(scope, send, next_path)
            else:
                await _send(send, 401, _signin_page(next_path, True), "html")
        else:
            await _send(send, 404, "Not found")


def _no_framing(send: Send) -> Send:
    """No other site may frame the app and trick a click on Approve."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), (b"x-frame-options", b"SAMEORIGIN")]
        await send(message)

    return sending


def _headers(scope: Scope) -> dict[str, str]:
    """The first of a repeated header (reversed: a dict keeps the last value written)."""
    pairs = reversed(scope.get("headers", []))
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in pairs}


def _with_proof_script(page: bytes) -> bytes:
    return page.replace(b"<head>", b"<head>" + PROOF_SCRIPT, 1)


def _drop_header(scope: Scope, name: str) -> None:
    scope["headers"] = [(k, v) for k, v in scope.get("headers", []) if k.lower() != name.encode()]


def _port(scope: Scope) -> int:
    """The port this server took the request on (its own socket, whatever `Host` says)."""
    server = scope.get("server") or ("", 0)
    return int(server[1] or 0)


def _session_id(scope: Scope, headers: dict[str, str]) -> str | None:
    """This port's session cookie; the first of a repeated cookie, as `_headers`."""
    parts = (p.strip().partition("=") for p in reversed(headers.get("cookie", "").split(";")))
    return {name: value for name, sep, value in parts if sep}.get(f"{COOKIE}_{_port(scope)}")


def _query_pairs(scope: Scope) -> list[tuple[str, str]]:
    return parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)


def _query(scope: Scope) -> dict[str, str]:
    return dict(_query_pairs(scope))


def _without_token(scope: Scope) -> str:
    rest = [(k, v) for k, v in _query_pairs(scope) if k != "token"]
    return _safe_next(scope.get("path", "/") + (f"?{urlencode(rest)}" if rest else ""))


def _safe_next(path: str) -> str:
    """Only a path on this server: never `//other.site` or a full URL."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_FORM_BYTES or not message.get("more_body"):
            return body[:MAX_FORM_BYTES]


async def _refuse(scope: Scope, send: Send, status: int, text: str) -> None:
    if scope["type"] == "websocket":
        # Closing before accepting makes the server answer the handshake with 403.
        await send({"type": "websocket.close", "code": 1008})
        return
    await _send(send, status, text)


async def _send(
    send: Send, status: int, text: str, kind: str = "plain", cookies: Sequence[str] = ()
) -> None:
    body = text.encode()
    headers = [
        (b"content-type", f"text/{kind}; charset=utf-8".encode()),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"x-frame-options", b"DENY"),
        (
            b"content-security-policy",
            b"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
            b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'",
        ),
        (b"referrer-policy", b"same-origin"),
        *((b"set-cookie", c.encode("latin-1")) for c in cookies),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_STYLE = """<style>
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 12vh auto; padding: 0 1rem; color: #262730; }
h1 { font-size: 1.5rem; } input { width: 100%; padding: .5rem; font-size: 1rem; box-sizing: border-box; }
button { margin-top: .8rem; padding: .5rem 1.2rem; font-size: 1rem; } .err { color: #b00020; }
code { background: #f0f2f6; padding: 0 .2rem; } p.small { color: #555; font-size: .9rem; }
</style>"""


def _page(title: str, body: str, head: str = "") -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
{head}{_STYLE}</head><body>{body}</body></html>"""


def _signin_page(next_path: str, failed: bool) -> str:
    error = (
        '<p class="err" role="alert">That token is not valid (a link works once). Try again.</p>'
        if failed
        else ""
    )
    nxt = html.escape(next_path, quote=True)
    # A link from another site arrives without the SameSite=Strict cookie: ask this
    # origin whether the browser is signed in, and if so load the page again from here.
    return _page(
        "Sign in · Gatehouse",
        f"""<h1>Sign in to Gatehouse</h1>
<p>Only signed-in people can see threads and approve tool calls.</p>{error}
<form method="post" action="{SIGNIN_PATH}"><label for="token">Sign-in token</label>
<input id="token" name="token" type="password" autocomplete="off" autofocus required>
<input type="hidden" name="next" value="{nxt}"><button type="submit">Sign in</button></form>
<p class="small">Open the link <code>gatehouse</code> printed when it started (each link works once), or
paste this install's secret: a file in <code>~/.config/gatehouse/secrets/</code> named after the database
(or <code>gatehouse.secret</code> next to it), readable only by the user who runs Gatehouse.</p>
<script>fetch("{WHOAMI_PATH}", {{credentials: "same-origin"}}).then(function (r) {{
  var last = Number(sessionStorage.getItem("gatehouse-retry") || 0);
  if (r.ok && Date.now() - last > 5000) {{  // once: never a reload loop
    sessionStorage.setItem("gatehouse-retry", String(Date.now())); location.replace(location.href); }} }});
</script>""",
    )


def _continue_page(next_path: str, proof: str | None = None) -> str:
    """On to `next_path`, leaving the session's `proof` in this origin's storage first."""
    target = html.escape(next_path, quote=True)
    keep = (
        f'<script>try {{ localStorage.setItem("{PROOF_KEY}", "{proof}"); }} catch (e) {{}}</script>'
        if proof
        else ""
    )
    return _page(
        "Gatehouse",
        f'<p>Signed in. <a href="{target}">Continue to Gatehouse</a>.</p>',
        f'{keep}<meta http-equiv="refresh" content="0;url={target}">',
    )
