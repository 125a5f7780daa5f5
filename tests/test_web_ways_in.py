"""Every run the web app starts goes through `Runner.submit` with this browser
session's options (ui/web/auto_approve.py: `tab_options`): the decision log names the
web app and the signed-in person whichever control decided, and a tab's auto-approve
reaches only the runs that tab starts. Through Streamlit's AppTest, no browser.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.app_page import app_page
from tests.test_ui_apptest import TIMEOUT, _thread, app, env, send, texts

__all__ = ["env"]  # the fixture, shared with tests/test_ui_apptest.py

ME = "ana@example.com"


def _decisions(thread_id: str) -> list[tuple[str, str | None, str | None, str | None]]:
    from gatehouse.ui.web.state import app_state

    records = app_state().session.view(thread_id).audit(10)
    return [(r.decision, r.message, r.source, r.actor) for r in records]


def _finish(thread_id: str) -> None:
    """Wait for the run a decision started in the background (the page does not follow
    it when it was decided from the inbox)."""
    from gatehouse.ui.web.state import app_state

    run = app_state().runner.latest(thread_id)
    assert run is not None and run.join(timeout=TIMEOUT)


def test_card_and_inbox_decisions_are_logged_as_web_by_the_signed_in_person(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEHOUSE_ACTOR", ME)  # who AppTest's in-process sign-in vouches for
    card = send(app(), "write a.md: one")
    card.button(key=next(b.key for b in card.button if b.key.endswith("-submit"))).click().run()
    assert not card.exception
    assert (env / "a.md").read_text() == "one\n"
    assert _decisions(_thread(card)) == [("approve", None, "web", ME)]

    waiting = send(app(), "write b.md: two")
    thread = _thread(waiting)
    inbox = app_page(TIMEOUT)
    inbox.query_params["view"] = "inbox"
    inbox.run()
    inbox.button(key=f"inbox-reject-{thread}").click().run()
    assert not inbox.exception
    for _ in range(150):  # sent once the moment to undo has passed
        inbox.run()
        if _decisions(thread):
            break
        time.sleep(0.1)
    _finish(thread)
    assert not (env / "b.md").exists()
    assert _decisions(thread) == [("reject", "Rejected from the approvals inbox.", "web", ME)]


def test_a_refused_answer_changes_nothing_and_says_why_on_the_card(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    radio = next(r for r in at.radio if r.key and r.key.endswith("-choice"))
    radio.set_value("respond").run()
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert any("write the answer the model should get" in e.value for e in at.error)
    assert "Approval needed" in texts(at)  # still paused, nothing submitted
    assert _decisions(_thread(at)) == []
