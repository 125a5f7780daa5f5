"""The web app signs people in, in real Chromium: the sign-in page for a stranger, the
one-time link `gatehouse ui` prints (used up the first time it is opened, signed in
or not), the install secret pasted, and nothing at all for a DNS-rebinding host or a
page on another origin (the page and the `/_stcore/stream` WebSocket alike). The
session is bound to its server: a program on another local port receives the cookie
from the browser but cannot approve with it, on its own port, on another Gatehouse
server's port, or after sign-out; `gatehouse signout --all` ends a session in use.
One server and one browser for the module (a second server where a test says so).
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import CHROMIUM_ARGS, ROOT, Server, chromium_path, streamlit_server

pytestmark = [pytest.mark.browser]
playwright_api = pytest.importorskip("playwright.sync_api")

WAIT_MS = 30_000
REBIND = "rebind.test"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    with streamlit_server(tmp_path_factory.mktemp("signin")) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # rebind.test resolves to loopback: what a DNS-rebinding attacker's name does.
    args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"]
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=args, headless=True)
        yield b
        b.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context()
    ctx.set_default_timeout(WAIT_MS)
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def foreign_site() -> Iterator[str]:
    """A page on another origin (another port of 127.0.0.1: same site, so even a
    SameSite=Strict cookie goes along, and only the Origin check stands)."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = b"<!doctype html><title>elsewhere</title><p>hello</p>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def link_from_log(server: Server) -> str:
    match = re.search(r"sign-in link \(works once\): (\S+)", server.log.read_text())
    assert match, server.log.read_text()
    return match.group(1)


def app_shown(page: Any) -> None:
    page.get_by_test_id("stChatInput").wait_for()


WS_PROBE = """(url) => new Promise((resolve) => {
  const ws = new WebSocket(url, ["streamlit"]);
  const t = setTimeout(() => resolve("timeout"), 10000);
  ws.onopen = () => { clearTimeout(t); ws.close(); resolve("open"); };
  ws.onclose = (e) => { clearTimeout(t); resolve("closed " + e.code); };
})"""

FETCH_PROBE = """(url) => fetch(url, {credentials: "include"}).then(r => "status " + r.status, e => "blocked " + e)"""


def test_stranger_sees_sign_in_page_only(context: Any, server: Server) -> None:
    page = context.new_page()
    response = page.goto(server.url + "/?thread=anything")
    assert response.status == 401
    page.get_by_role("heading", name="Sign in to Gatehouse").wait_for()
    assert page.get_by_label("Sign-in token").is_visible()
    assert page.get_by_test_id("stChatInput").count() == 0
    # The app's own WebSocket is refused too, from the app's own origin.
    assert (
        page.evaluate(WS_PROBE, server.url.replace("http", "ws") + "/_stcore/stream")
        == "closed 1006"
    )


def test_one_time_link_signs_in_once(browser: Any, server: Server) -> None:
    link = link_from_log(server)
    first = browser.new_context()
    second = browser.new_context()
    try:
        page = first.new_page()
        page.goto(link)
        app_shown(page)
        assert "token=" not in page.url  # the token leaves the address bar
        port = server.url.rsplit(":", 1)[1]
        cookie = next(
            c for c in first.cookies(server.url) if c["name"] == f"gatehouse_session_{port}"
        )
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        # Signed in, the WebSocket opens (the control for the refusals below).
        assert (
            page.evaluate(WS_PROBE, server.url.replace("http", "ws") + "/_stcore/stream") == "open"
        )
        again = second.new_page()
        assert again.goto(link).status == 401
        again.get_by_text("That token is not valid").wait_for()
    finally:
        first.close()
        second.close()


def test_paste_install_secret_on_sign_in_page(context: Any, server: Server) -> None:
    page = context.new_page()
    page.goto(server.url + "/?view=settings")
    page.get_by_label("Sign-in token").fill("wrong-token-wrong-token")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("That token is not valid").wait_for()
    page.get_by_label("Sign-in token").fill(server.secret)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_test_id("stMainBlockContainer").wait_for()
    assert page.url.endswith("/?view=settings")


def test_link_from_another_site_still_opens_the_app(
    context: Any, server: Server, foreign_site: str
) -> None:
    """A SameSite=Strict cookie is not sent on a navigation another site starts: the
    sign-in page notices the browser is signed in and loads the page again itself."""
    server.sign_in(context)
    page = context.new_page()
    page.goto(foreign_site)
    page.set_content(f'<a id="go" href="{server.url}/?view=inbox">open</a>')
    page.click("#go")
    page.get_by_test_id("stMainBlockContainer").wait_for()
    assert "view=inbox" in page.url


def test_rebinding_host_gets_nothing(context: Any, server: Server) -> None:
    port = server.url.rsplit(":", 1)[1]
    server.sign_in(context)  # signed in on 127.0.0.1; the rebinding name is another host
    page = context.new_page()
    response = page.goto(f"http://{REBIND}:{port}/?token={server.secret}")
    assert response.status == 403
    assert "does not answer to this address" in page.content()
    assert page.evaluate(WS_PROBE, f"ws://{REBIND}:{port}/_stcore/stream") == "closed 1006"
    assert page.evaluate(FETCH_PROBE, f"http://{REBIND}:{port}/_stcore/host-config") == "status 403"
    assert not [
        c
        for c in context.cookies(f"http://{REBIND}:{port}")
        if c["name"].startswith("gatehouse_session")
    ]


def test_foreign_origin_page_gets_nothing_even_with_the_cookie(
    context: Any, server: Server, foreign_site: str
) -> None:
    server.sign_in(context)
    page = context.new_page()
    page.goto(foreign_site)
    ws = server.url.replace("http", "ws") + "/_stcore/stream"
    assert page.evaluate(WS_PROBE, ws) == "closed 1006"
    assert page.evaluate(FETCH_PROBE, server.url + "/_stcore/host-config").startswith("blocked")


def test_forged_identity_header_and_cookie_are_refused(server: Server) -> None:
    from gatehouse.graph import sign_identity

    port = server.url.rsplit(":", 1)[1]
    forged = {"X-Gatehouse-Identity": "alice (security lead)", "Accept": "text/html"}
    assert httpx.get(server.url + "/", headers=forged).status_code == 401
    # A value signed with the install secret (the cookie of old) is no session.
    for name in ("gatehouse_session", f"gatehouse_session_{port}"):
        cookie = {"Cookie": f"{name}={sign_identity(server.secret, 'ana')}"}
        assert httpx.get(server.url + "/_stcore/host-config", headers=cookie).status_code == 401
    assert httpx.get(server.url + "/_stcore/health").status_code == 200  # readiness stays open
    signed_in = httpx.get(f"{server.url}/?token={server.secret}", headers={"Accept": "text/html"})
    session = signed_in.cookies[f"gatehouse_session_{port}"]
    page = httpx.get(server.url + "/", cookies={f"gatehouse_session_{port}": session})
    assert page.status_code == 200 and page.headers["x-frame-options"] == "SAMEORIGIN"


def test_install_secret_is_private_and_outside_the_database_folder(server: Server) -> None:
    from gatehouse.graph import secret_path

    secret = secret_path(str(server.db))
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert secret.read_text().strip() == server.secret
    assert not (server.db.parent / "gatehouse.secret").exists()
    assert server.db.parent not in secret.parents and server.workspace not in secret.parents


def test_the_app_script_served_without_the_guard_shows_nothing(
    tmp_path: Path, browser: Any
) -> None:
    """`streamlit run ui/web/app.py` (skipping ui/web/launch.py) must not become an open
    approval surface: with no identity signed by the guard the page refuses, whatever
    headers a client sends."""
    from bench.web.server import free_port, running
    from gatehouse.ui.web.serve import streamlit_command

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    env.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(workspace),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    cmd = streamlit_command(port, app=ROOT / "ui" / "web" / "app.py")
    with running(cmd, port, cwd=tmp_path, env=env, log=tmp_path / "log", timeout=60) as (url, _):
        context = browser.new_context(
            extra_http_headers={"X-Gatehouse-Identity": "alice (security lead)"}
        )
        try:
            page = context.new_page()
            page.goto(url)
            page.get_by_text("was not served by Gatehouse's sign-in guard").wait_for(
                timeout=WAIT_MS
            )
            assert page.get_by_test_id("stChatInput").count() == 0
        finally:
            context.close()


class Listener:
    """A program on another port of 127.0.0.1: it serves a page and keeps the cookies
    the browser sends it (browsers send a host's cookies to every port)."""

    def __init__(self) -> None:
        self.cookies: list[str] = []
        listener = self

        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                listener.cookies.append(self.headers.get("Cookie", ""))
                body = b"<!doctype html><title>a local dev server</title><p>hello</p>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stolen(self, name: str) -> str:
        """The value of cookie `name` as this program received it."""
        for header in reversed(self.cookies):
            for part in header.split(";"):
                key, _, value = part.strip().partition("=")
                if key == name:
                    return value
        raise AssertionError(f"{name} never reached the other port: {self.cookies}")


def _replay(browser: Any, url: str, name: str, value: str) -> Any:
    """A fresh browser (the attacker's) holding a stolen cookie for 127.0.0.1."""
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    context.add_cookies([{"name": name, "value": value, "url": url}])
    return context


def test_a_cookie_another_port_receives_cannot_approve(
    browser: Any, server: Server, tmp_path: Path
) -> None:
    """A program on another local port gets the session cookie from the browser (the
    page there cannot read it: HttpOnly). Replayed from a fresh browser it opens no
    WebSocket on its own server while the session is live (the proof is in the
    signed-in origin's storage only), nothing on a second Gatehouse server of the
    same install on another port, and nothing at all once the person signed out: the
    pending `run_command` stays pending and does not run."""
    from gatehouse.graph import Settings, open_session

    session = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        run = session.send(None, "run: touch pwned.txt")
        run.collect()
        assert session.view(run.thread_id).pending is not None
    finally:
        session.close()
    port = server.url.rsplit(":", 1)[1]
    name = f"gatehouse_session_{port}"
    listener = Listener()
    victim = browser.new_context()
    victim.set_default_timeout(WAIT_MS)
    try:
        with streamlit_server(
            tmp_path, extra_env={"GATEHOUSE_DB": str(server.db)}
        ) as second:  # the same install (database, secret) on another port
            server.sign_in(victim)
            page = victim.new_page()
            page.goto(listener.url)
            assert name not in page.evaluate("document.cookie")  # the page cannot read it
            value = listener.stolen(name)  # the program behind it got it all the same
            # Replayed on its own port while the session is live: the page's shell
            # loads, but its WebSocket (where a card is shown and approved) is refused.
            attacker = _replay(browser, server.url, name, value)
            try:
                stolen_page = attacker.new_page()
                stolen_page.goto(f"{server.url}/?thread={run.thread_id}")
                ws = server.url.replace("http", "ws") + "/_stcore/stream"
                assert stolen_page.evaluate(WS_PROBE, ws) == "closed 1006"
                assert stolen_page.get_by_test_id("stChatInput").count() == 0
            finally:
                attacker.close()
            mine = victim.new_page()  # the control: the signed-in browser itself is served
            mine.goto(f"{server.url}/?thread={run.thread_id}")
            mine.get_by_role("button", name="Approve").first.wait_for()
            mine.close()
            other_port = second.url.rsplit(":", 1)[1]
            for cookie_name in (name, f"gatehouse_session_{other_port}"):
                attacker = _replay(browser, second.url, cookie_name, value)
                try:
                    answer = attacker.new_page().goto(f"{second.url}/?thread={run.thread_id}")
                    assert answer.status == 401
                finally:
                    attacker.close()

            # The person signs out (the page /_gatehouse/signout offers the button).
            out = victim.new_page()
            out.goto(server.url + "/_gatehouse/signout")
            out.get_by_role("button", name="Sign out").click()
            out.get_by_role("heading", name="Signed out").wait_for()
            attacker = _replay(browser, server.url, name, value)
            try:
                stolen_page = attacker.new_page()
                assert stolen_page.goto(f"{server.url}/?thread={run.thread_id}").status == 401
                stolen_page.get_by_role("heading", name="Sign in to Gatehouse").wait_for()
                ws = server.url.replace("http", "ws") + "/_stcore/stream"
                assert stolen_page.evaluate(WS_PROBE, ws) == "closed 1006"
            finally:
                attacker.close()
    finally:
        victim.close()
        listener.httpd.shutdown()
    check = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        assert check.view(run.thread_id).pending is not None  # still waiting: nobody approved
    finally:
        check.close()
    assert not (server.workspace / "pwned.txt").exists()


def test_a_one_time_link_opened_by_a_signed_in_browser_is_used_up(
    browser: Any, tmp_path: Path
) -> None:
    with streamlit_server(tmp_path) as srv:
        link = link_from_log(srv)
        signed_in = srv.sign_in(browser.new_context())
        fresh = browser.new_context()
        try:
            page = signed_in.new_page()
            page.goto(link)
            app_shown(page)
            assert "token=" not in page.url
            again = fresh.new_page()
            assert again.goto(link).status == 401
            again.get_by_text("That token is not valid").wait_for()
        finally:
            signed_in.close()
            fresh.close()


def test_signout_all_from_the_terminal_ends_every_browser_session(
    browser: Any, server: Server
) -> None:
    """`gatehouse signout --all` works without the web app's help (another process, on
    the database) and ends a session the browser is using."""
    import subprocess
    import sys

    from tests.support.clean_env import without_settings

    context = server.sign_in(browser.new_context())
    try:
        page = context.new_page()
        page.goto(server.url)
        app_shown(page)
        env = {**without_settings(), "GATEHOUSE_DB": str(server.db)}
        done = subprocess.run(
            [sys.executable, "-m", "gatehouse.ui.term.cli", "signout", "--all", "--json"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["signed_out"] >= 1
        assert page.goto(server.url).status == 401
        ws = server.url.replace("http", "ws") + "/_stcore/stream"
        assert page.evaluate(WS_PROBE, ws) == "closed 1006"
        refused = subprocess.run(
            [sys.executable, "-m", "gatehouse.ui.term.cli", "signout"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert refused.returncode == 2 and "--all" in refused.stderr
    finally:
        context.close()
