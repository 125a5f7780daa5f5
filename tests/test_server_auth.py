"""`langgraph dev` on the project's langgraph.json requires credentials and talks only to
the browser origins it should: langgraph-sdk with and without credentials, a team API
key, the `x-auth-scheme: langsmith` shortcut closed, the exact CORS preflights Studio,
Agent Chat UI and a foreign site send, a rebinding `Host`, and real Chromium pages on
a foreign origin and a rebinding host. One server for the module.
"""

from __future__ import annotations

import getpass
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import AuthenticationError

from gatehouse.graph import Settings, open_session
from tests.support.browser import CHROMIUM_ARGS, chromium_path
from tests.support.langgraph_dev import GRAPH, DevServer, langgraph_dev

pytestmark = pytest.mark.slow

TEAM_KEY = "team-key-for-ana-0123456789"
STUDIO = "https://smith.langchain.com"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    home = tmp_path_factory.mktemp("server-auth")
    workspace = home / "workspace"
    workspace.mkdir()
    config = home / "gatehouse.toml"
    config.write_text('[policy.run_command]\nmode = "ask"\napprovers = ["ana@example.com"]\n')
    with langgraph_dev(
        home,
        db=home / "gatehouse.db",
        workspace=workspace,
        GATEHOUSE_CONFIG=str(config),
        GATEHOUSE_API_KEYS=f"ana@example.com={TEAM_KEY}",
    ) as dev:
        yield dev


def audit_of(server: DevServer, thread_id: str) -> list[Any]:
    session = open_session(
        Settings(db=str(server.home / "gatehouse.db"), workspace=str(server.home / "workspace"))
    )
    try:
        return session.view(thread_id).audit()
    finally:
        session.close()


def pause_of(client: Any, thread_id: str) -> list[str]:
    return [i["id"] for i in client.threads.get_state(thread_id)["interrupts"]]


FORGED = {
    "configurable": {
        "gatehouse_actor": "alice (security lead)",
        "gatehouse_source": "web",
        "langgraph_auth_user_id": "alice",
        "langgraph_auth_user": {"identity": "alice"},
    }
}


def test_forged_identity_fields_are_ignored(server: DevServer) -> None:
    client = server.client()
    tid = client.threads.create()["thread_id"]
    client.runs.wait(
        tid,
        GRAPH,
        input={"messages": [{"role": "user", "content": "write forged.md: x"}]},
        config=FORGED,
    )
    assert pause_of(client, tid)
    client.runs.wait(
        tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}}, config=FORGED
    )
    assert (server.home / "workspace" / "forged.md").read_text() == "x\n"
    [record] = [r for r in audit_of(server, tid) if r.tool == "write_file"]
    assert (record.actor, record.source) == (getpass.getuser(), "langgraph-server")


def test_only_a_tools_approvers_decide_through_the_server(server: DevServer) -> None:
    client = server.client()  # the local user: signed in, but not an approver of run_command
    tid = client.threads.create()["thread_id"]
    client.runs.wait(
        tid, GRAPH, input={"messages": [{"role": "user", "content": "run: echo approvers"}]}
    )
    before = pause_of(client, tid)
    assert before
    refused = client.runs.create(
        tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}}, config=FORGED
    )
    client.runs.join(tid, refused["run_id"])
    assert client.runs.get(tid, refused["run_id"])["status"] == "error"
    assert pause_of(client, tid) == before  # still paused, as it was
    assert not [r for r in audit_of(server, tid) if r.tool == "run_command"]
    ana = get_sync_client(url=server.url, api_key=TEAM_KEY)
    ana.runs.wait(tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}})
    assert not pause_of(client, tid)
    [record] = [r for r in audit_of(server, tid) if r.tool == "run_command"]
    assert (record.actor, record.source, record.decision) == (
        "ana@example.com",
        "langgraph-server",
        "approve",
    )


def test_sdk_without_credentials_gets_401(server: DevServer) -> None:
    anonymous = get_sync_client(url=server.url, api_key=None, headers={})
    with pytest.raises(AuthenticationError):
        anonymous.threads.create()
    with pytest.raises(AuthenticationError):
        anonymous.threads.search()
    wrong = get_sync_client(
        url=server.url, headers={"Authorization": "Bearer not-the-secret-at-all"}
    )
    with pytest.raises(AuthenticationError):
        wrong.threads.search()
    # langgraph dev's Studio shortcut: any request saying so was let in unchecked.
    studio_claim = get_sync_client(url=server.url, headers={"x-auth-scheme": "langsmith"})
    with pytest.raises(AuthenticationError):
        studio_claim.threads.search()
    # The server's other ways in (MCP, A2A, the store) are behind the same handler.
    for path in ("/mcp", "/a2a/gatehouse", "/store/items/search"):
        assert httpx.post(server.url + path, json={}).status_code == 401, path


def test_sdk_with_the_install_secret_and_with_a_team_key(server: DevServer) -> None:
    thread = server.client().threads.create()
    assert server.client().threads.get(thread["thread_id"])["thread_id"] == thread["thread_id"]
    # Agent Chat UI sends its key as X-Api-Key; the SDK does too with api_key=.
    team = get_sync_client(url=server.url, api_key=TEAM_KEY)
    run = team.runs.wait(None, GRAPH, input={"messages": [{"role": "user", "content": "hello"}]})
    assert run is not None


def preflight(
    server: DevServer, origin: str, headers: str = "authorization,content-type"
) -> httpx.Response:
    """What Chromium sends before a cross-origin POST with an Authorization header to a
    loopback server (private network access included)."""
    return httpx.options(
        f"{server.url}/threads/search",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": headers,
            "Access-Control-Request-Private-Network": "true",
        },
    )


def test_studio_and_agent_chat_ui_preflights_pass(server: DevServer) -> None:
    for origin in (STUDIO, "http://localhost:3000"):
        response = preflight(server, origin, "authorization,content-type,x-api-key")
        assert response.status_code == 200, (origin, response.text)
        assert response.headers["access-control-allow-origin"] == origin
        assert "authorization" in response.headers["access-control-allow-headers"].lower()
        assert response.headers["access-control-allow-private-network"] == "true"
    # The real request from Studio's origin, with the documented header.
    real = httpx.post(
        f"{server.url}/threads/search", json={}, headers={"Origin": STUDIO, **server.headers}
    )
    assert real.status_code == 200 and real.headers["access-control-allow-origin"] == STUDIO


def test_foreign_origin_gets_no_cors_and_no_private_network_grant(server: DevServer) -> None:
    response = preflight(server, "https://evil.example")
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers
    assert "access-control-allow-private-network" not in response.headers
    # Even with a key (stolen or not), a page on a foreign origin is refused.
    real = httpx.post(
        f"{server.url}/threads/search",
        json={},
        headers={"Origin": "https://evil.example", **server.headers},
    )
    assert real.status_code == 403


def test_rebinding_host_is_refused(server: DevServer) -> None:
    port = server.url.rsplit(":", 1)[1]
    response = httpx.post(
        f"{server.url}/threads/search",
        json={},
        headers={"Host": f"rebind.test:{port}", **server.headers},
    )
    assert response.status_code == 403


@pytest.fixture(scope="module")
def attacker_site() -> Iterator[str]:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = b"<!doctype html><title>drive-by</title>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://attacker.test:{httpd.server_address[1]}"
    httpd.shutdown()


DRIVE_BY = """async (url) => {
  try {
    const r = await fetch(url + "/threads", {method: "POST", headers: {"content-type": "application/json"},
                                             body: JSON.stringify({metadata: {graph_id: "gatehouse"}})});
    return "status " + r.status;
  } catch (e) { return "blocked"; }
}"""
SAME_ORIGIN = """async () => { const r = await fetch("/threads/search", {method: "POST", body: "{}",
  headers: {"content-type": "application/json"}}); return "status " + r.status; }"""


@pytest.mark.browser
def test_chromium_drive_by_and_rebinding_pages_get_nothing(
    server: DevServer, attacker_site: str, tmp_path: Path
) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    before = len(server.client().threads.search(limit=1000))
    port = server.url.rsplit(":", 1)[1]
    args = [
        *CHROMIUM_ARGS,
        "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebind.test 127.0.0.1",
    ]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=args, headless=True)
        try:
            page = browser.new_page()
            page.goto(attacker_site)
            assert page.evaluate(DRIVE_BY, server.url) == "blocked"
            assert page.evaluate(DRIVE_BY, f"http://localhost:{port}") == "blocked"
            rebound = browser.new_page()
            assert rebound.goto(f"http://rebind.test:{port}/threads").status == 403
            assert rebound.evaluate(SAME_ORIGIN) == "status 403"
        finally:
            browser.close()
    assert len(server.client().threads.search(limit=1000)) == before
