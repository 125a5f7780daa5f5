"""Issue 32 item 7 with Streamlit's AppTest (no browser): risk in the inbox and a
confirmation before a one-key approve of a call that executes or deletes, a neutral
mark for "answered by you", a very long message shown by its head, Settings as a
readable table with secrets masked, and the decision log's filters.

Reuses the fixtures and helpers of tests/test_ui_apptest.py (same app, own database).
"""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from gatehouse.ui.web.inbox import UNDO_S
from tests.support.app_page import app_page
from tests.test_ui_apptest import TIMEOUT, app, env, send, texts

__all__ = ["env"]  # the fixture, shared with tests/test_ui_apptest.py


def _thread_of(at: AppTest) -> str:
    tid = at.query_params["thread"]
    return tid[0] if isinstance(tid, list) else tid


def _page(view: str) -> AppTest:
    at = app_page(TIMEOUT)
    at.query_params["view"] = view
    return at.run()


def _until(check, seconds: float = 15) -> bool:  # noqa: ANN001 - a predicate
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_inbox_rows_show_risk_and_rm_rf_asks_before_it_runs(env: Path) -> None:
    (env / "build").mkdir()
    (env / "build" / "out.o").write_text("x")
    danger = _thread_of(send(app(), "run: rm -rf build"))
    mild = _thread_of(send(app(), "write todo.md: buy milk"))
    inbox = _page("inbox")
    body = texts(inbox)
    assert ":red-badge[risk: execute]" in body and ":orange-badge[risk: write]" in body
    # The oldest row is the rm -rf and answers to `a`: that key (or the click) only asks,
    # showing the whole command (graph/protocol/confirm.py's rule).
    approve = inbox.button(key=f"inbox-approve-{danger}")
    assert approve.label == "Approve" and approve.proto.shortcut.lower() == "a"
    approve.click().run()
    assert not inbox.exception
    assert (env / "build" / "out.o").exists(), "one key ran an rm -rf"
    assert any("Approve 1 call as shown below?" in w.value for w in inbox.warning)
    assert any('"command": "rm -rf build"' in c.value for c in inbox.code)
    # Cancel (also Escape): nothing ran, the question is gone, the thread still waits.
    cancel = inbox.button(key=f"inbox-{danger}-confirm-no")
    assert cancel.proto.shortcut.lower() == "escape"
    cancel.click().run()
    assert not any("as shown below?" in w.value for w in inbox.warning)
    assert (env / "build").exists()
    inbox.button(key=f"inbox-approve-{danger}").click().run()
    inbox.button(key=f"inbox-{danger}-confirm-yes").click().run()
    assert not inbox.exception
    assert _until(lambda: not (env / "build").exists())
    # A write is approved by one click; the row says so and offers a moment to undo.
    inbox.button(key=f"inbox-approve-{mild}").click().run()
    assert "Approving" in texts(inbox) and inbox.button(key=f"inbox-undo-{mild}")
    assert not (env / "todo.md").exists()
    assert _until(lambda: not inbox.run().exception and (env / "todo.md").exists())


def test_inbox_undo_takes_back_a_quick_decision(env: Path) -> None:
    mild = _thread_of(send(app(), "write undo.md: not yet"))
    inbox = _page("inbox")
    inbox.button(key=f"inbox-reject-{mild}").click().run()
    assert "Rejecting" in texts(inbox)
    inbox.button(key=f"inbox-undo-{mild}").click().run()
    time.sleep(UNDO_S + 0.5)  # past the moment the reject would have been sent
    inbox.run()  # the thread is still waiting: its row is back, with its buttons
    assert inbox.button(key=f"inbox-approve-{mild}").label == "Approve"
    assert not any("Rejected" in t for t in [texts(inbox)])


def test_answered_by_you_gets_a_neutral_mark_not_a_tick(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    radio = next(r for r in at.radio if r.key and r.key.endswith("-choice"))
    radio.set_value("respond").run()
    key = radio.key.removesuffix("-choice")
    at.text_area(key=f"{key}-respond").input("I wrote it by hand already").run()
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert not at.exception
    at.run()
    body = texts(at)
    assert "↩ write_file · answered by you" in body
    assert "✓ write_file" not in body  # nothing ran: no tick as if it had
    assert not (env / "todo.md").exists()


def test_a_200_kb_message_shows_its_head_and_all_of_it_on_demand(env: Path) -> None:
    from gatehouse.graph import Settings, open_session

    lines = [f"line {i:06d} of a very long paste" for i in range(6_500)]
    big = "\n".join(lines)
    assert len(big) > 200_000
    at = send(app(), big)
    assert not at.exception
    drawn = "\n".join(
        str(m.value)
        for m in at.markdown
        if "line 000000" in str(m.value) and "gh-copy" not in str(m.value)
    )
    assert "line 000010" in drawn and lines[-1] not in drawn
    assert len(drawn) < 25_000
    assert any(f"of {len(big):,} characters" in str(c.value) for c in at.caption)
    # The copy button carries the whole message, and so does the export.
    assert any("gh-copy" in str(m.value) and lines[-1] in str(m.value) for m in at.markdown)
    session = open_session(Settings(db=str(env.parent / "gh.db"), workspace=str(env)))
    try:
        assert big in session.view(_thread_of(at)).export("md")
    finally:
        session.close()
    # "Show all" draws the rest.
    at.button(
        key=next(b.key for b in at.button if b.key and b.key.startswith("show-all-"))
    ).click().run()
    assert any(lines[-1] in str(m.value) and "gh-copy" not in str(m.value) for m in at.markdown)
    assert not any(f"of {len(big):,} characters" in str(c.value) for c in at.caption)


def test_settings_are_readable_tables_with_secrets_masked(env: Path) -> None:
    (env.parent / "none.toml").write_text(
        '[model]\napi_key = "sk-live-SECRET123"\nname = "gpt-4o-mini"\n\n'
        '[notify]\nwebhook = "https://hooks.example.com/ping?token=TOKEN456&team=ops"\nsecret = "SIGN789"\n\n'
        '[policy.write_file]\nmode = "allow"\n\n'
        '[hooks]\nbefore_llm = ["gatehouse.graph:SystemContext"]\n\n'
        '[[hooks.on_exit]]\npath = "gatehouse.graph:RequireTool"\nargs = { tool = "run_tests", max_reminders = 2 }\n'
    )
    at = _page("settings")
    assert not at.exception, at.exception
    assert not at.json, "settings drawn as raw JSON"
    tables = {t.value.index.name: t.value for t in at.table}
    general = tables["Setting"]["Value"]
    assert general["Model"].startswith("gpt-4o-mini")
    assert general["API key"] == "set"
    assert general["Workspace folder"] == str(env)
    assert general["Database"] == str(env.parent / "gh.db")
    assert "team=ops" in general["Webhook when a thread waits"]
    policy = tables["Tool"]
    assert policy.loc["write_file", "When the model calls it"] == "runs without asking"
    assert policy.loc["run_command", "When the model calls it"] == (
        "asks first, except commands on the allow list (below)"
    )
    assert policy.loc["run_command", "Risk"] == "execute"
    hooks = tables["When"].reset_index()
    assert {"gatehouse.graph:SystemContext", "gatehouse.graph:RequireTool"} <= set(hooks["Hook"])
    assert "tool = run_tests" in " ".join(hooks["Arguments"])
    everything = texts(at) + "".join(t.value.to_csv() for t in at.table)
    for secret in ("SECRET123", "TOKEN456", "SIGN789"):
        assert secret not in everything


def test_masking_hides_secrets_by_name_and_in_urls() -> None:
    from gatehouse.ui.web.settings import HIDDEN, masked

    shown = masked(
        {
            "db": "postgresql://app:pw0rd@db.internal:5432/gh",
            "hooks": {"before_llm": [{"path": "my:Hook", "args": {"api_key": "k-1", "limit": 3}}]},
        }
    )
    assert shown["db"] == f"postgresql://app:{HIDDEN}@db.internal:5432/gh"
    assert shown["hooks"]["before_llm"][0]["args"] == {"api_key": HIDDEN, "limit": 3}


def _decide(workspace: Path, actor: str, text: str, decision: dict) -> str:
    from gatehouse.graph import Settings, open_session

    session = open_session(
        Settings(db=str(workspace.parent / "gh.db"), workspace=str(workspace)), actor=actor
    )
    try:
        run = session.send(None, text)
        run.collect()
        session.resume(run.thread_id, {"decisions": [decision]}).collect()
        return run.thread_id
    finally:
        session.close()


def _log_rows(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown if "gh-tool" in str(m.value))


def test_decision_log_filters_by_thread_tool_decision_and_who(env: Path) -> None:
    alice = _decide(env, "alice", "write a.md: one", {"type": "approve"})
    _decide(env, "bob", "run: rm -rf build", {"type": "reject", "message": "no"})
    _decide(env, "bob", "write b.md: two", {"type": "approve"})
    at = _page("audit")
    assert not at.exception
    assert _log_rows(at).count("<details") == 3
    # Each filter offers the values the log holds.
    who = at.multiselect(key="audit-filter-who")
    assert set(who.options) == {"alice", "bob"}
    who.select("bob").run()
    rows = _log_rows(at)
    assert rows.count("<details") == 2 and "by alice" not in rows
    at.multiselect(key="audit-filter-decision").select("rejected").run()
    rows = _log_rows(at)
    assert rows.count("<details") == 1 and "run_command · rejected · by bob" in rows
    # Tool and thread narrow too; no match says so.
    at.multiselect(key="audit-filter-who").unselect("bob").run()
    at.multiselect(key="audit-filter-decision").unselect("rejected").run()
    at.multiselect(key="audit-filter-tool").select("write_file").run()
    assert _log_rows(at).count("<details") == 2
    thread = at.multiselect(key="audit-filter-thread")
    assert any(o.startswith("write a.md: one · ") for o in thread.options)
    thread.select(alice).run()
    rows = _log_rows(at)
    assert rows.count("<details") == 1 and "by alice" in rows
    at.multiselect(key="audit-filter-tool").unselect("write_file").select("run_command").run()
    assert _log_rows(at) == ""
    assert any("No decision matches" in i.value for i in at.info)


def test_an_inbox_row_that_cannot_show_a_call_whole_approves_only_on_its_open_card(
    env: Path,
) -> None:
    lines = "\\n".join(f"line {i}" for i in range(1, 121))
    long_row = _thread_of(send(app(), f"write big.md: {lines}"))
    inbox = _page("inbox")
    # The row says how much of the call it leaves out, exactly; no one-click approve.
    assert "more characters" in texts(inbox)
    button = inbox.button(key=f"inbox-approve-{long_row}")
    assert button.label == "Review to approve"
    button.click().run()
    assert not (env / "big.md").exists()
    assert inbox.expander[0].proto.expanded  # the full card is open
    card = next(b.key for b in inbox.button if b.key.endswith("-submit"))
    assert inbox.button(key=card).disabled  # the 121-line preview is not all in view yet
    show = next(b.key for b in inbox.button if b.key.endswith("-preview-all-button"))
    inbox.button(key=show).click().run()
    assert not inbox.button(key=card).disabled
    inbox.button(key=card).click().run()
    assert _until(lambda: (env / "big.md").exists())
