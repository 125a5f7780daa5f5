"""Access settings and the web guard's rules without a browser: `[access]` parsing, the
install secret's file, signed identities, the reverse-proxy mode (a shared secret
proves the proxy) and the OIDC configuration check. The guard runs as real ASGI
middleware in front of a Starlette app, over HTTP and WebSocket.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from gatehouse.graph import ConfigError, WebSessions, load_settings
from gatehouse.graph.service.access import (
    install_secret,
    load_access,
    oidc_problem,
    private_paths,
    secret_path,
    sign_identity,
    verify_identity,
)
from gatehouse.graph.store.web_sessions import IDLE_S, MAX_AGE_S
from gatehouse.ui.web.guard import GUARD_PURPOSE, Guard, OneTimeTokens

SECRET = "s" * 40
PROXY_SECRET = "proxy-shared-secret-123"


def test_access_defaults_and_env_override() -> None:
    access = load_access({}, env={})
    assert access.web == "token" and "127.0.0.1" in access.allowed_hosts()
    access = load_access(
        {"web": "token", "hosts": ["gate.internal"]},
        env={
            "GATEHOUSE_ALLOWED_ORIGINS": "https://gate.example.com",
            "GATEHOUSE_API_KEYS": "ana@example.com=" + "k" * 20,
        },
    )
    assert "gate.internal" in access.allowed_hosts()
    assert access.origins == ("https://gate.example.com",)
    assert access.api_keys == {"k" * 20: "ana@example.com"}


@pytest.mark.parametrize(
    ("table", "env", "message"),
    [
        ({"web": "open"}, {}, "web must be one of"),
        ({"web": "proxy"}, {}, "needs proxy_secret"),
        ({}, {"GATEHOUSE_PROXY_SECRET": "short"}, "at least 16"),
        ({"origins": ["https://x.example/path"]}, {}, "is not an origin"),
        ({"api_keys": {"ana": "short"}}, {}, "at least 16"),
        ({"colour": "blue"}, {}, "unknown settings"),
        ({}, {"GATEHOUSE_API_KEYS": "no-equals-sign"}, "GATEHOUSE_API_KEYS"),
    ],
)
def test_bad_access_settings_are_clear_errors(table: dict, env: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_access(table, env=env)


def test_access_table_in_gatehouse_toml(tmp_path: Path) -> None:
    config = tmp_path / "gatehouse.toml"
    config.write_text('[access]\nweb = "proxy"\nproxy_secret = "' + PROXY_SECRET + '"\n')
    settings = load_settings(config, env={})
    assert load_access(settings.access, env={}).web == "proxy"


def test_install_secret_created_private_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    db = tmp_path / "db" / "gatehouse.db"
    path = secret_path(str(db))
    # Outside the database's folder (often inside the workspace), one per database.
    assert path.parent == tmp_path / "config" / "gatehouse" / "secrets"
    assert path.name.startswith("gatehouse.db-") and path != secret_path(str(tmp_path / "x.db"))
    first = install_secret(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(first) >= 32
    assert install_secret(path) == first
    os.chmod(path, 0o644)  # someone loosened it: made private again on next start
    assert install_secret(path) == first and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_path("postgresql://db/x").name == "secret"
    # An install from before keeps the secret it made next to its database.
    legacy = db.parent / "gatehouse.secret"
    legacy.parent.mkdir()
    legacy.write_text("l" * 40)
    assert secret_path(str(db)) == legacy
    assert {legacy, tmp_path / "config" / "gatehouse"} <= set(private_paths(str(db)))


def test_signed_identity_rejects_forgery_and_expiry() -> None:
    value = sign_identity(SECRET, "ana@example.com", now=1000)
    assert verify_identity(SECRET, value, now=1001) == "ana@example.com"
    assert verify_identity("t" * 40, value, now=1001) is None  # another install's secret
    assert verify_identity(SECRET, value, purpose="guard", now=1001) is None  # another purpose
    mac = value.rsplit(".", 1)[1]
    forged_body = sign_identity(SECRET, "alice (security lead)", now=1000).rsplit(".", 1)[0]
    assert verify_identity(SECRET, forged_body + "." + mac, now=1001) is None
    assert verify_identity(SECRET, value, now=1000 + 31 * 24 * 3600) is None


def _app(
    access_table: dict,
    sessions: WebSessions | None = None,
    port: int = 8501,
    tokens: OneTimeTokens | None = None,
) -> TestClient:
    async def page(request: Request) -> PlainTextResponse:
        return PlainTextResponse(request.headers.get("x-gatehouse-identity", ""))

    async def stream(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(ws.headers.get("x-gatehouse-identity", ""))
        with contextlib.suppress(WebSocketDisconnect):  # the client left, or the guard ended it
            while True:
                await ws.send_text(await ws.receive_text())

    access = load_access(access_table, env={})
    app = Starlette(
        routes=[Route("/", page), WebSocketRoute("/_stcore/stream", stream)],
        middleware=[
            Middleware(
                Guard,
                access=access,
                secret=SECRET,
                sessions=sessions,
                tokens=tokens or OneTimeTokens(),
            )
        ],
    )
    return TestClient(app, base_url=f"http://127.0.0.1:{port}")


def test_proxy_mode_needs_the_shared_secret() -> None:
    client = _app({"web": "proxy", "proxy_secret": PROXY_SECRET})
    user = {"X-Forwarded-User": "ana@example.com"}
    assert (
        client.get("/", headers=user).status_code == 401
    )  # straight to the app, not through the proxy
    assert (
        client.get("/", headers={**user, "X-Gatehouse-Proxy-Secret": "wrong" * 5}).status_code
        == 401
    )
    proven = {
        **user,
        "X-Gatehouse-Proxy-Secret": PROXY_SECRET,
        "X-Gatehouse-Identity": "alice (forged)",
    }
    response = client.get("/", headers=proven)
    assert response.status_code == 200
    assert verify_identity(SECRET, response.text, purpose=GUARD_PURPOSE) == "ana@example.com"
    local = {
        **proven,
        "Host": "127.0.0.1:8501",
    }  # the test client's WebSocket names no host of its own
    with client.websocket_connect(
        "/_stcore/stream", headers={**local, "Origin": "http://127.0.0.1:8501"}
    ) as ws:
        assert (
            verify_identity(SECRET, ws.receive_text(), purpose=GUARD_PURPOSE) == "ana@example.com"
        )
    for refused in (
        {**local, "Origin": "http://evil.example"},
        {**local, "Host": "rebind.test:8501"},
        {**local, "X-Gatehouse-Proxy-Secret": "nope"},
    ):
        with (
            pytest.raises(WebSocketDisconnect),
            client.websocket_connect("/_stcore/stream", headers=refused),
        ):
            pass


def test_configured_host_and_origin_are_accepted() -> None:
    client = _app(
        {
            "web": "proxy",
            "proxy_secret": PROXY_SECRET,
            "hosts": ["gate.example.com"],
            "origins": ["https://gate.example.com"],
        }
    )
    proven = {"X-Forwarded-User": "bo", "X-Gatehouse-Proxy-Secret": PROXY_SECRET}
    ok = client.get(
        "/", headers={**proven, "Host": "gate.example.com", "Origin": "https://gate.example.com"}
    )
    assert ok.status_code == 200
    assert client.get("/", headers={**proven, "Host": "other.example.com"}).status_code == 403


def test_oidc_configuration_check() -> None:
    good = {
        "auth": {
            "redirect_uri": "https://gate.example.com/oauth2callback",
            "cookie_secret": "c" * 32,
            "client_id": "gatehouse",
            "client_secret": "x",
            "server_metadata_url": "https://idp.example.com/.well-known/openid-configuration",
        }
    }
    assert oidc_problem(good) is None
    named = {
        "auth": {
            "redirect_uri": good["auth"]["redirect_uri"],
            "cookie_secret": "c" * 32,
            "okta": {
                k: good["auth"][k] for k in ("client_id", "client_secret", "server_metadata_url")
            },
        }
    }
    assert oidc_problem(named) is None
    assert "needs an [auth] table" in (oidc_problem({}) or "")
    assert "missing client_secret" in (
        oidc_problem({"auth": {**good["auth"], "client_secret": ""}}) or ""
    )
    assert "oauth2callback" in (
        oidc_problem({"auth": {**good["auth"], "redirect_uri": "https://g/x"}}) or ""
    )
    assert "https://" in (
        oidc_problem({"auth": {**good["auth"], "server_metadata_url": "http://idp"}}) or ""
    )


def test_oidc_mode_passes_requests_to_streamlit_login_after_address_checks() -> None:
    client = _app({"web": "oidc"})
    response = client.get("/")
    assert response.status_code == 200  # st.login / st.user decide in the page script
    assert verify_identity(SECRET, response.text, purpose=GUARD_PURPOSE) == ""
    assert client.get("/", headers={"Host": "rebind.test:8501"}).status_code == 403


def test_database_files_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    """The terminal and the Python API trust whoever can open the database: its files,
    the WAL included, and a folder Gatehouse creates for it are the owner's alone."""
    from gatehouse.graph import Settings, open_session

    db = tmp_path / ".gatehouse" / "gatehouse.db"
    session = open_session(Settings(db=str(db), workspace=str(tmp_path)))
    try:
        session.storage.decisions.record([])  # opened, written: WAL and shared memory exist
        files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
        assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files if f.exists()} == {
            f.name: 0o600 for f in files
        }
        assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    finally:
        session.close()


def _signed_in(client: TestClient, token: str) -> str:
    """The session cookie's value after opening the sign-in link `?token=`."""
    value, _ = _signed_in_with_proof(client, token)
    return value


def _signed_in_with_proof(client: TestClient, token: str) -> tuple[str, str]:
    """The session cookie's value and the proof the sign-in page leaves in localStorage."""
    response = client.get(f"/?token={token}", headers={"Accept": "text/html"})
    assert response.status_code == 200
    [value] = [v for k, v in response.cookies.items() if k == f"gatehouse_session_{_port(client)}"]
    proof = re.search(r'setItem\("gatehouse-proof", "([0-9a-f]{64})"\)', response.text)
    assert proof, response.text
    client.cookies.clear()  # each request below names the cookies it sends
    return value, proof.group(1)


def _port(client: TestClient) -> int:
    return int(str(client.base_url).rsplit(":", 1)[1].rstrip("/"))


def _who(client: TestClient, name: str, value: str) -> int:
    return client.get("/", headers={"Cookie": f"{name}={value}"}).status_code


def test_a_session_cookie_works_on_its_own_port_only_and_until_revoked(tmp_path: Path) -> None:
    """Browsers send a host's cookies to every port: a value another port received is
    refused by a server on any other port (the same install, the same database) and
    by its own server once signed out or signed out everywhere."""
    sessions = WebSessions(str(tmp_path / "gh.db"))
    here, there = _app({}, sessions, 8501), _app({}, sessions, 8502)
    value = _signed_in(here, SECRET)
    assert _who(here, "gatehouse_session_8501", value) == 200
    assert _who(here, "gatehouse_session", value) == 401  # the host-wide name of old
    assert _who(there, "gatehouse_session_8502", value) == 401  # replayed on another port
    assert _who(there, "gatehouse_session_8501", value) == 401
    assert _who(here, "gatehouse_session_8501", value[:-1] + "x") == 401  # altered
    signed_out = here.post(
        "/_gatehouse/signout", headers={"Cookie": f"gatehouse_session_8501={value}"}
    )
    assert signed_out.status_code == 200 and "Max-Age=0" in signed_out.headers["set-cookie"]
    assert _who(here, "gatehouse_session_8501", value) == 401  # replayed after sign-out
    # `gatehouse signout --all`: every live session, every port.
    a, b = _signed_in(here, SECRET), _signed_in(there, SECRET)
    assert sessions.revoke_all() == 2
    assert (
        _who(here, "gatehouse_session_8501", a) == _who(there, "gatehouse_session_8502", b) == 401
    )
    sessions.close()


def test_a_session_ends_when_idle_or_old(tmp_path: Path) -> None:
    sessions = WebSessions(str(tmp_path / "gh.db"))
    sid = sessions.open("ana", 8501)
    start = time.time()
    assert sessions.identity(sid, 8501, now=start + IDLE_S - 60) == "ana"  # seen: idle anew
    assert sessions.identity(sid, 8501, now=start + 2 * IDLE_S - 120) == "ana"
    assert sessions.identity(sid, 8501, now=start + 3 * IDLE_S) is None  # idle too long
    kept = sessions.open("ana", 8501)
    now = start
    while now < start + MAX_AGE_S - IDLE_S:  # in use all the time, still ends at the limit
        now += IDLE_S / 2
        assert sessions.identity(kept, 8501, now=now) == "ana"
    assert sessions.identity(kept, 8501, now=start + MAX_AGE_S + 1) is None
    sessions.close()


def test_a_one_time_link_is_used_up_even_by_a_signed_in_browser(tmp_path: Path) -> None:
    sessions, tokens = WebSessions(str(tmp_path / "gh.db")), OneTimeTokens()
    client = _app({}, sessions, tokens=tokens)
    first, second = tokens.issue(), tokens.issue()
    value = _signed_in(client, first)
    opened = client.get(
        f"/?token={second}",
        headers={"Cookie": f"gatehouse_session_8501={value}", "Accept": "text/html"},
    )
    assert opened.status_code == 200 and "set-cookie" not in opened.headers
    fresh = client.get(f"/?token={second}", headers={"Accept": "text/html"})
    assert fresh.status_code == 401 and "That token is not valid" in fresh.text
    sessions.close()


def test_the_stream_needs_the_pages_proof_and_stops_when_revoked(tmp_path: Path) -> None:
    """The cookie alone (what another port's program receives) opens no stream: it
    needs the proof only the signed-in origin's page holds. An open stream ends at
    its next message once the session is revoked."""
    sessions = WebSessions(str(tmp_path / "gh.db"))
    client = _app({}, sessions)
    value, proof = _signed_in_with_proof(client, SECRET)
    other_value, other_proof = _signed_in_with_proof(client, SECRET)
    headers = {
        "Cookie": f"gatehouse_session_8501={value}",
        "Host": "127.0.0.1:8501",
        "Origin": "http://127.0.0.1:8501",
    }
    stream = "ws://127.0.0.1:8501/_stcore/stream"
    for query in ("", "?gatehouse_proof=" + "0" * 64, f"?gatehouse_proof={other_proof}"):
        with (
            pytest.raises(WebSocketDisconnect),
            client.websocket_connect(stream + query, headers=headers),
        ):
            pass
    with client.websocket_connect(f"{stream}?gatehouse_proof={proof}", headers=headers) as ws:
        assert verify_identity(SECRET, ws.receive_text(), purpose=GUARD_PURPOSE)
        ws.send_text("approve")
        assert ws.receive_text() == "approve"
        sessions.revoke_all()  # `gatehouse signout --all` while the tab is open
        ws.send_text("approve")
        with pytest.raises(WebSocketDisconnect):
            ws.receive_text()
    assert other_value != value
    sessions.close()


@pytest.mark.postgres
def test_the_session_list_on_postgres(postgres_url: str) -> None:
    """The same rules on a team's Postgres: its own port only, revoked everywhere at once."""
    sessions = WebSessions(postgres_url)
    try:
        sid = sessions.open("ana@example.com", 8501)
        assert sessions.identity(sid, 8501) == "ana@example.com"
        assert sessions.identity(sid, 8502) is None
        assert sessions.identity(sid, 8501, now=time.time() + IDLE_S + 60) is None
        assert sessions.revoke_all() >= 1 and sessions.identity(sid, 8501) is None
    finally:
        sessions.close()
