"""Access settings and the web guard's rules without a browser: `[access]` parsing, the
install secret's file, signed identities, the reverse-proxy mode (a shared secret
proves the proxy) and the OIDC configuration check. The guard runs as real ASGI
middleware in front of a Starlette app, over HTTP and WebSocket.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from graph import ConfigError, load_settings
from graph.service.access import (
    install_secret,
    load_access,
    oidc_problem,
    secret_path,
    sign_identity,
    verify_identity,
)
from ui.web.guard import GUARD_PURPOSE, Guard

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


def test_install_secret_created_private_and_kept(tmp_path: Path) -> None:
    path = secret_path(str(tmp_path / "db" / "gatehouse.db"))
    assert path == tmp_path / "db" / "gatehouse.secret"
    first = install_secret(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(first) >= 32
    assert install_secret(path) == first
    os.chmod(path, 0o644)  # someone loosened it: made private again on next start
    assert install_secret(path) == first and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_path("postgresql://db/x").name == "secret"


def test_signed_identity_rejects_forgery_and_expiry() -> None:
    value = sign_identity(SECRET, "ana@example.com", now=1000)
    assert verify_identity(SECRET, value, now=1001) == "ana@example.com"
    assert verify_identity("t" * 40, value, now=1001) is None  # another install's secret
    assert verify_identity(SECRET, value, purpose="guard", now=1001) is None  # another purpose
    mac = value.rsplit(".", 1)[1]
    forged_body = sign_identity(SECRET, "alice (security lead)", now=1000).rsplit(".", 1)[0]
    assert verify_identity(SECRET, forged_body + "." + mac, now=1001) is None
    assert verify_identity(SECRET, value, now=1000 + 31 * 24 * 3600) is None


def _app(access_table: dict) -> TestClient:
    async def page(request: Request) -> PlainTextResponse:
        return PlainTextResponse(request.headers.get("x-gatehouse-identity", ""))

    async def stream(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(ws.headers.get("x-gatehouse-identity", ""))
        await ws.close()

    access = load_access(access_table, env={})
    app = Starlette(
        routes=[Route("/", page), WebSocketRoute("/_stcore/stream", stream)],
        middleware=[Middleware(Guard, access=access, secret=SECRET)],
    )
    return TestClient(app, base_url="http://127.0.0.1:8501")


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
    from graph import Settings, open_session

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
