"""A server's first page draws the chat input before the page's code loads
(ui/web/chat_input.py, issue 36): the input is usable ~1 s sooner on a fresh
`uv run gatehouse`, in the state the thread is in, and a message sent from it while the
page still loads is sent, once.

Three ways in: what the early input imports (a fresh interpreter), its state for each
kind of thread (AppTest), and a real server in Chromium whose Session cannot open
until the test says so (tests/support/gated_model.py).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from gatehouse.graph import Settings, open_session
from tests.support.browser import Server, chromium_path, launch_chromium, streamlit_server
from tests.support.clean_env import offline_settings

ROOT = Path(__file__).resolve().parents[1]
WAIT_MS = 30_000
APPROVAL_HINT = "Answer the approval card above first"


@pytest.fixture
def web_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = offline_settings(tmp_path, monkeypatch, "ws")
    (workspace / "notes.md").write_text("hello notes\n")
    return tmp_path


def paused_thread(db: Path | str, workspace: Path) -> str:
    """A thread paused on an approval (the demo model writes a file)."""
    session = open_session(Settings(db=str(db), workspace=str(workspace)))
    try:
        run = session.send(None, "write todo.md: buy milk")
        run.collect()
        assert session.view(run.thread_id).pending is not None
        return run.thread_id
    finally:
        session.close()


def test_the_early_input_loads_no_langgraph(web_env: Path) -> None:
    """What app.py imports and reads before the chat input is drawn, in a fresh
    interpreter (`web_env`: its settings and database)."""
    code = (
        "import json, sys\n"
        "import streamlit\n"
        "import gatehouse.ui.web.chat_input, gatehouse.ui.web.copy, gatehouse.ui.web.identity, gatehouse.ui.web.loading, gatehouse.ui.web.serve\n"
        "from gatehouse import graph\n"
        "from gatehouse.graph.protocol.threads import thread_id_problem\n"
        "graph.open_reader(graph.load_settings().db).close()\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert not loaded & {"langgraph", "langchain_core", "langsmith", "pydantic"}, loaded


def _early_page() -> None:
    import streamlit as st

    from gatehouse.ui.web.chat_input import early_chat_input

    st.session_state["drawn"] = early_chat_input()


def early(
    monkeypatch: pytest.MonkeyPatch, params: dict[str, str], *, loaded: bool = False
) -> AppTest:
    """The early input as a server's first page runs it (`loaded`: the page's code is
    loaded already, as on every later page of the server)."""
    import gatehouse.ui.web.chat_input as chat_input

    if not loaded:
        # This test process has loaded the pages for other tests; a server's first
        # page has not.
        monkeypatch.setattr(chat_input, "PAGE_MODULE", "gatehouse_test.not_loaded")
    at = AppTest.from_function(_early_page, default_timeout=30)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def test_a_new_thread_gets_an_enabled_input(web_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = early(monkeypatch, {})
    assert not at.exception and at.session_state["drawn"] is True
    (box,) = at.chat_input
    assert not box.disabled and box.placeholder.startswith("Message Gatehouse")


def test_a_paused_thread_gets_a_disabled_input_that_says_why(
    web_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread_id = paused_thread(web_env / "gh.db", web_env / "ws")
    at = early(monkeypatch, {"thread": thread_id})
    assert at.session_state["drawn"] is True
    (box,) = at.chat_input
    assert box.disabled and APPROVAL_HINT in box.placeholder


@pytest.mark.postgres
def test_a_paused_thread_on_postgres(
    web_env: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    monkeypatch.setenv("GATEHOUSE_DB", postgres_url)
    thread_id = paused_thread(postgres_url, web_env / "ws")
    at = early(monkeypatch, {"thread": thread_id})
    assert at.session_state["drawn"] is True
    (box,) = at.chat_input
    assert box.disabled and APPROVAL_HINT in box.placeholder
    assert early(monkeypatch, {"thread": "no-such-thread"}).session_state["drawn"] is False


def test_an_interrupted_thread_gets_a_disabled_input(
    web_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = open_session(Settings(db=str(web_env / "gh.db"), workspace=str(web_env / "ws")))
    run = session.send(None, "list files")
    run.collect()
    session.close()
    # A run that was going when its process died: "running", and no live lease.
    with sqlite3.connect(web_env / "gh.db") as db:
        db.execute(
            "UPDATE gatehouse_threads SET status = 'running' WHERE thread_id = ?", [run.thread_id]
        )
    at = early(monkeypatch, {"thread": run.thread_id})
    (box,) = at.chat_input
    assert box.disabled and "interrupted" in box.placeholder


@pytest.mark.parametrize(
    "params",
    [
        {"thread": "no-such-thread"},  # the page draws "Thread not found", no input
        {"thread": "bad\x01id"},
        {"view": "inbox"},
        {"view": "output", "thread": "t", "call": "c"},
    ],
)
def test_no_early_input_where_the_page_draws_none(
    web_env: Path, monkeypatch: pytest.MonkeyPatch, params: dict[str, str]
) -> None:
    at = early(monkeypatch, params)
    assert at.session_state["drawn"] is False and not at.chat_input


def test_a_message_sent_when_gatehouse_cannot_start_is_kept_in_view(
    web_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early input is drawn before the Session opens; when it cannot open (here a
    model factory that does not exist), a message sent from it is not lost."""
    import gatehouse.ui.web.chat_input as chat_input
    from tests.support.app_page import app_page

    monkeypatch.setenv("GATEHOUSE_MODEL_FACTORY", "no_such_module:make")
    monkeypatch.setattr(chat_input, "PAGE_MODULE", "gatehouse_test.not_loaded")
    at = app_page(30).run()
    said = "Gatehouse cannot show this page right now"
    assert any(said in e.value for e in at.error)
    at.chat_input(key="prompt").set_value("buy milk").run()
    assert any(said in e.value for e in at.error)
    # Kept in view (ui/web/unsent.py), and sent once the page works again.
    kept = [c for c in at.get("chat_message") if c.name == "user"]
    assert [m.value for c in kept for m in c.markdown if "buy milk" in m.value], kept
    assert any("kept: sent as soon as the page works again" in c.value for c in at.caption)


def test_no_early_input_once_the_page_code_is_loaded(
    web_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gatehouse.ui.web.page  # noqa: F401 - what every page after a server's first loads

    at = early(monkeypatch, {}, loaded=True)
    assert at.session_state["drawn"] is False and not at.chat_input


# -- a real server in Chromium ---------------------------------------------------------


@pytest.fixture
def gated_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    chromium_path()
    gate = tmp_path / "open-the-session"
    env = {
        "GATEHOUSE_MODEL_FACTORY": "tests.support.gated_model:make_model",
        "GATEHOUSE_TEST_GATE": str(gate),
    }
    with streamlit_server(tmp_path, env) as server:
        yield server, gate


@pytest.fixture
def first_page(gated_server: tuple[Server, Path]) -> Iterator[Callable[[str], Any]]:
    """Opens the server's first page (a path) in Chromium, signed in."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    server, _gate = gated_server
    with playwright_api.sync_playwright() as p:
        browser = launch_chromium(p)
        context = server.sign_in(browser.new_context(viewport={"width": 1280, "height": 900}))

        def open_page(path: str) -> Any:
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            page.goto(server.url + path)
            return page

        try:
            yield open_page
        finally:
            browser.close()


@pytest.mark.browser
@pytest.mark.slow
def test_a_message_sent_while_the_first_page_loads_is_sent_once(
    gated_server: tuple[Server, Path], first_page: Callable[[str], Any]
) -> None:
    from playwright.sync_api import expect

    _server, gate = gated_server
    page = first_page("/")
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_be_enabled(timeout=WAIT_MS)
    # The Session cannot open yet: the page is still loading, and the input usable.
    expect(page.locator(".gh-loading")).to_be_visible()
    box.fill("list files")
    box.press("Enter")
    gate.touch()
    main = page.get_by_test_id("stMainBlockContainer")
    expect(main).to_contain_text("Here is what happened", timeout=WAIT_MS)
    expect(main).to_contain_text("notes.md")
    assert re.search(r"[?&]thread=", page.url)
    expect(page.get_by_test_id("stChatMessage").filter(has_text="list files")).to_have_count(1)
    expect(page.get_by_test_id("stChatInput")).to_have_count(1)
    expect(page.locator(".gh-loading")).to_have_count(0)


@pytest.mark.browser
@pytest.mark.slow
def test_a_paused_thread_as_the_first_page(
    gated_server: tuple[Server, Path], first_page: Callable[[str], Any]
) -> None:
    from playwright.sync_api import expect

    server, gate = gated_server
    thread_id = paused_thread(server.db, server.workspace)
    page = first_page(f"/?thread={thread_id}")
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".gh-loading")).to_be_visible()
    expect(box).to_be_disabled()
    expect(box).to_have_attribute("placeholder", re.compile(APPROVAL_HINT))
    gate.touch()
    main = page.get_by_test_id("stMainBlockContainer")
    expect(main.get_by_role("button", name="Approve")).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_test_id("stChatInput")).to_have_count(1)
    expect(box).to_be_disabled()


@pytest.mark.browser
@pytest.mark.slow
def test_the_page_icon_is_gatehouses_and_local(
    gated_server: tuple[Server, Path], first_page: Callable[[str], Any]
) -> None:
    """The page names no icon (its image code imports numpy on a first page):
    ui/web/loading.py serves Gatehouse's where Streamlit's page looks for one."""
    from playwright.sync_api import expect

    from gatehouse.ui.web.loading import ICON

    server, _gate = gated_server
    page = first_page("/")
    expect(page.get_by_test_id("stChatInputTextArea")).to_be_enabled(timeout=WAIT_MS)
    icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
    assert not re.match(r"(https?:)?//", icon), icon  # nothing fetched from elsewhere
    got = page.context.request.get(page.evaluate("(href) => new URL(href, location).href", icon))
    assert got.status == 200 and got.body() == ICON.read_bytes()
    # Behind the sign-in like every other route.
    signed_out = page.context.browser.new_context()
    try:
        assert signed_out.request.get(server.url + "/favicon.png").status == 401
    finally:
        signed_out.close()


def test_streamlits_repl_check_counts_as_done_under_launch(web_env: Path) -> None:
    """ui/web/launch.py marks Streamlit's once-per-process REPL warning as shown (its
    check walks every loaded module: ~45 ms of a first page). Fails if Streamlit
    renames the flag, which would silently bring the cost back."""
    code = (
        "import streamlit.delta_generator as dg\n"
        "assert dg._use_warning_has_been_displayed is False\n"
        "import gatehouse.ui.web.launch\n"
        "print(dg._use_warning_has_been_displayed)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True"
