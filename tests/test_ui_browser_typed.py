"""What a person typed survives, and the page says what happened (issue 55, items 5
and 6), in real headless Chromium against `streamlit run` with the offline demo model:

- a message sent during a run is queued with the thread (in the database): a reload
  shows it under the run, it is sent when the run ends, in order, once;
- after Stop the queued message stays in view with "Send now" and "Discard";
- the database locked by another process (BEGIN EXCLUSIVE): the page says so within
  seconds, keeps the typed message in view, and sends it by itself once the lock goes,
  never showing a traceback;
- a person's message keeps its line breaks and is not read as Markdown; a command that
  exits 1 looks failed, with its exit code.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gatehouse.graph import Settings, open_session
from tests.support.browser import (
    Server,
    chromium_browser,
    chromium_path,
    press_card_button,
    script_idle,
    signed_in_page,
    streamlit_server,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

WAIT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 1000}
APPROVE = re.compile(r"^(Approve|Submit decision)$")
# A run that lasts until the test lets it end: a reload or a click lands inside it
# however slow the machine.
HOLD = "run: until [ -e {name} ]; do sleep 0.2; done; echo released"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    tmp = tmp_path_factory.mktemp("typed")
    config = tmp / "gatehouse.toml"
    config.write_text("[tools]\nshell_timeout_s = 600\n")
    with streamlit_server(tmp, {"GATEHOUSE_CONFIG": str(config)}) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.goto(server.url + "/")
        ready(page)
        yield page
        # Nothing a person saw was a traceback.
        expect(page.get_by_test_id("stException")).to_have_count(0)


def main(page: Any) -> Any:
    return page.get_by_test_id("stMainBlockContainer")


def ready(page: Any) -> None:
    page.get_by_test_id("stSidebar").get_by_role("heading", name="Gatehouse").wait_for(
        timeout=WAIT_MS
    )


def send(page: Any, text: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_be_enabled(timeout=WAIT_MS)
    box.fill(text)
    box.press("Enter")


def users(page: Any) -> list[str]:
    """The user bubbles' texts, top to bottom, as shown."""
    bubbles = main(page).locator('[data-testid="stChatMessage"]:has(.gh-said)')
    return [b.locator(".gh-said").first.inner_text() for b in bubbles.all()]


def stop_button(page: Any) -> Any:
    return page.get_by_test_id("stBottom").get_by_role("button", name="Stop")


def hold_a_run(page: Any, server: Server, name: str) -> Any:
    """Start a command that runs until `name` exists in the workspace; its release."""
    release = server.workspace / name
    release.unlink(missing_ok=True)
    send(page, HOLD.format(name=name))
    expect(main(page)).to_contain_text("Approval needed", timeout=WAIT_MS)
    script_idle(page, WAIT_MS)
    press_card_button(main(page), APPROVE, timeout_ms=WAIT_MS)
    main(page).get_by_role("button", name="Yes, approve").click()  # it executes: confirmed
    expect(main(page)).to_contain_text("run_command · running", timeout=WAIT_MS)
    return release


def thread_of(page: Any) -> str:
    match = re.search(r"thread=([^&]+)", page.url)
    assert match, page.url
    return match[1]


def humans(server: Server, thread_id: str) -> list[str]:
    session = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        return [str(m.content) for m in session.view(thread_id).messages if m.type == "human"]
    finally:
        session.close()


def test_a_queued_message_survives_a_reload_and_is_sent_when_the_run_ends(
    page: Any, server: Server
) -> None:
    release = hold_a_run(page, server, "release-queue")
    send(page, "list files")
    queued = main(page).get_by_text("queued: sent when the run ends")
    expect(queued).to_be_visible(timeout=WAIT_MS)
    page.reload()
    ready(page)
    # Stored with the thread, not in the page: the reloaded page shows it under the run,
    # and the running message once (no ghost copy).
    expect(queued).to_be_visible(timeout=WAIT_MS)
    expect(stop_button(page)).to_be_visible(timeout=WAIT_MS)
    expect(main(page).get_by_text(re.compile(r"^running · \d+ s$"))).to_be_visible(timeout=WAIT_MS)
    assert users(page).count(HOLD.format(name="release-queue")) == 1, users(page)
    release.touch()
    # Sent when the run ended, after it, once.
    expect(main(page)).to_contain_text("list_files · done", timeout=WAIT_MS)
    expect(stop_button(page)).to_have_count(0, timeout=WAIT_MS)
    expect(queued).to_have_count(0)
    assert humans(server, thread_of(page)) == [HOLD.format(name="release-queue"), "list files"]
    assert users(page) == [HOLD.format(name="release-queue"), "list files"]


def test_after_stop_a_queued_message_waits_with_send_now_and_discard(
    page: Any, server: Server
) -> None:
    hold_a_run(page, server, "never-released")
    send(page, "list files")
    expect(main(page).get_by_text("queued: sent when the run ends")).to_have_count(
        1, timeout=WAIT_MS
    )
    send(page, "second queued")
    expect(page.get_by_test_id("stBottom")).to_contain_text("2 queued messages", timeout=WAIT_MS)
    stop_button(page).click()
    expect(stop_button(page)).to_have_count(0, timeout=WAIT_MS)
    # Not sent by itself after Stop, not lost: in view, saying why, with a choice.
    waiting = main(page).get_by_text("queued, not sent: the run before it did not complete")
    expect(waiting).to_have_count(2, timeout=WAIT_MS)
    page.reload()
    ready(page)
    expect(waiting).to_have_count(2, timeout=WAIT_MS)
    thread = thread_of(page)
    assert humans(server, thread) == [HOLD.format(name="never-released")]
    second = main(page).locator('[data-testid="stChatMessage"]', has_text="second queued")
    second.get_by_role("button", name="Discard").click()
    expect(waiting).to_have_count(1, timeout=WAIT_MS)
    first = main(page).locator('[data-testid="stChatMessage"]', has_text="list files")
    first.get_by_role("button", name="Send now").click()
    expect(main(page)).to_contain_text("list_files · done", timeout=WAIT_MS)
    expect(waiting).to_have_count(0, timeout=WAIT_MS)
    assert humans(server, thread) == [
        HOLD.format(name="never-released"),
        "list files",
    ]


LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
print("released", flush=True)
"""


def test_a_locked_database_keeps_the_message_and_the_page_recovers(
    page: Any, server: Server
) -> None:
    send(page, "list files")
    expect(main(page)).to_contain_text("list_files · done", timeout=WAIT_MS)
    script_idle(page, WAIT_MS)
    thread = thread_of(page)
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(server.db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdin is not None
        assert locker.stdout.readline().strip() == "locked"
        sent_at = time.monotonic()
        send(page, "read notes.md")
        # Said within seconds (not a grey page for half a minute), the text kept in view.
        expect(main(page)).to_contain_text("database cannot be used right now", timeout=WAIT_MS)
        said_after = time.monotonic() - sent_at
        expect(main(page).get_by_text("not sent yet: waiting for the database")).to_be_visible()
        assert said_after < 15, said_after
        expect(page.get_by_test_id("stException")).to_have_count(0)
        locker.stdin.write("\n")
        locker.stdin.flush()
        assert locker.stdout.readline().strip() == "released"
    finally:
        locker.kill()
        locker.wait()
    # The page recovers by itself and sends the message it kept, once.
    expect(main(page)).to_contain_text("read_file · done", timeout=WAIT_MS)
    expect(main(page).get_by_text("waiting for the database")).to_have_count(0, timeout=WAIT_MS)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert humans(server, thread) == ["list files", "read notes.md"]
    print(f"locked database said after {said_after:.1f} s")


def test_own_message_is_shown_as_written(page: Any, server: Server) -> None:
    text = "# not a heading\n  two spaces *kept*\nthird line"
    send(page, text)
    expect(main(page)).to_contain_text("I understand requests like", timeout=WAIT_MS)
    bubble = main(page).locator(".gh-said", has_text="not a heading")
    expect(bubble).to_have_count(1, timeout=WAIT_MS)
    assert bubble.inner_text() == text
    # Not a heading (the page's title, the thread's, quotes the whole first line).
    expect(main(page).get_by_role("heading", name="not a heading", exact=True)).to_have_count(0)


def test_a_command_that_exits_non_zero_looks_failed(page: Any, server: Server) -> None:
    send(page, "run: ls no-such-file")  # `ls` runs freely (the allow list)
    row = main(page).locator("details.gh-tool", has_text="run_command")
    expect(row).to_contain_text(
        re.compile(r"✗ run_command · failed \(exit code 2\)"), timeout=WAIT_MS
    )
    expect(row.locator("summary")).not_to_contain_text("✓")
    page.reload()  # the history draws it the same way
    ready(page)
    expect(row).to_contain_text(
        re.compile(r"✗ run_command · failed \(exit code 2\)"), timeout=WAIT_MS
    )


def test_undo_gives_the_message_back_and_says_what_changed_on_disk(
    page: Any, server: Server
) -> None:
    send(page, "write undone.md: hello")
    expect(main(page)).to_contain_text("Approval needed", timeout=WAIT_MS)
    script_idle(page, WAIT_MS)
    press_card_button(main(page), APPROVE, timeout_ms=WAIT_MS)
    expect(main(page)).to_contain_text("write_file · done", timeout=WAIT_MS)
    script_idle(page, WAIT_MS)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="Undo last turn").click()
    sidebar.get_by_role("button", name="Yes").click()
    said = main(page).get_by_text(re.compile("^Undone: "))
    expect(said).to_contain_text(
        "undo does not change them back: write_file path: undone.md", timeout=WAIT_MS
    )
    assert (server.workspace / "undone.md").read_text() == "hello\n"
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_have_value("write undone.md: hello", timeout=WAIT_MS)
    # Given back, not sent: nothing runs until the person sends it.
    script_idle(page, WAIT_MS)
    expect(main(page)).not_to_contain_text("Approval needed")
    box.press("Enter")
    expect(main(page)).to_contain_text("Approval needed", timeout=WAIT_MS)
