"""Page logic of the Streamlit app with Streamlit's AppTest (no browser).

Each test gets its own database and workspace; the app's process-wide Session is
cached per (db, workspace), so tests do not share threads.
"""

from __future__ import annotations

import getpass
import html
import re
import time
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_page import app_page
from tests.support.clean_env import offline_settings

APP = str(Path(__file__).resolve().parent.parent / "ui" / "web" / "app.py")
TIMEOUT = 30


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = offline_settings(tmp_path, monkeypatch, "workspace")
    (workspace / "notes.md").write_text("hello notes\n")
    return workspace


def app() -> AppTest:
    at = app_page(TIMEOUT)
    return at.run()


def texts(at: AppTest) -> str:
    parts = (
        [m.value for m in at.markdown] + [e.value for e in at.info] + [e.value for e in at.warning]
    )
    parts += (
        [e.value for e in at.error] + [c.value for c in at.code] + [c.value for c in at.caption]
    )
    parts += [s.label for s in at.get("status")]
    return "\n".join(str(p) for p in parts)


def said(bubble: Any) -> str:
    """A user bubble's text as the person sees it (drawn as written, ui/web/tool_blocks.py)."""
    return html.unescape(re.sub(r"<[^>]+>", "", bubble.markdown[0].value))


def send(at: AppTest, text: str) -> AppTest:
    at.chat_input(key="prompt").set_value(text).run()
    # The run finished during that script run (the page follows it and reruns).
    return at


def test_demo_banner_and_empty_page(env: Path) -> None:
    at = app()
    assert not at.exception
    assert "Demo mode" in texts(at)
    assert "Send a message to start a thread" in texts(at)


def test_send_message_shows_tool_and_reply(env: Path) -> None:
    at = send(app(), "list files")
    assert not at.exception
    assert "thread" in at.query_params
    body = texts(at)
    assert "Here is what happened" in body
    assert "list_files · done" in body
    assert "notes.md" in body


def test_approval_card_approve_writes_file(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    body = texts(at)
    assert "Approval needed" in body
    assert "write_file" in body and "risk: write" in body
    assert at.chat_input(key="prompt").disabled
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert not at.exception
    assert (env / "todo.md").read_text() == "buy milk\n"
    assert "write_file · done" in texts(at)
    assert not at.chat_input(key="prompt").disabled


def _choose(at: AppTest, decision: str) -> str:
    radio = next(r for r in at.radio if r.key and r.key.endswith("-choice"))
    radio.set_value(decision).run()
    return radio.key.removesuffix("-choice")


def test_reject_with_reason(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    key = _choose(at, "reject")
    at.text_input(key=f"{key}-reason").input("not today").run()
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    body = texts(at)
    assert "declined" in body and "not today" in body
    assert not (env / "todo.md").exists()


def test_edit_is_validated_before_submit(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    key = _choose(at, "edit")
    at.text_area(key=f"{key}-args").input('{"path": "todo.md"').run()
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert any("not valid JSON" in e.value for e in at.error)
    at.text_area(key=f"{key}-args").input('{"path": "todo.md"}').run()
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert any("content" in e.value for e in at.error)
    assert "Approval needed" in texts(at)  # still paused
    at.text_area(key=f"{key}-args").input('{"path": "todo.md", "content": "eggs\\n"}').run()
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert (env / "todo.md").read_text() == "eggs\n"


def test_inbox_lists_and_decides(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    thread = (
        at.query_params["thread"][0]
        if isinstance(at.query_params["thread"], list)
        else at.query_params["thread"]
    )
    inbox = app_page(TIMEOUT)
    inbox.query_params["view"] = "inbox"
    inbox.run()
    body = texts(inbox)
    assert "1 thread waiting" in body
    # The compact row: the tool and all of its arguments (a row approves only what it shows).
    assert r'`write_file` {"path": "todo.md", "content": "buy milk\\n"}' in body, body
    inbox.button(key=f"inbox-approve-{thread}").click().run()
    for _ in range(150):  # sent after the moment to undo, then resumed in the background
        inbox.run()
        if (env / "todo.md").exists():
            break
        time.sleep(0.1)
    assert (env / "todo.md").read_text() == "buy milk\n"
    # Decided in place: still the inbox, now empty.
    assert inbox.query_params["view"] in ("inbox", ["inbox"])
    inbox.run()
    assert any("Nothing is waiting" in m.value for m in inbox.success)


def test_reload_shows_history_and_threads(env: Path) -> None:
    at = send(app(), "read notes.md")
    thread = at.query_params["thread"]
    thread = thread[0] if isinstance(thread, list) else thread
    again = app_page(TIMEOUT)
    again.query_params["thread"] = thread
    again.run()
    body = texts(again)
    assert "hello notes" in body and "read notes.md" in body
    assert any(b.key == f"thread-{thread}" for b in again.button)


def test_undo_with_confirmation(env: Path) -> None:
    at = send(app(), "list files")
    at = send(at, "read notes.md")
    thread = at.query_params["thread"]
    thread = thread[0] if isinstance(thread, list) else thread
    at.button(key=f"undo-{thread}").click().run()
    assert any("Undo the last turn?" in w.value for w in at.warning)
    at.button(key=f"undo-{thread}-yes").click().run()
    assert "hello notes" not in texts(at)
    assert "list files" in texts(at)


def test_undo_says_what_the_turn_changed_on_disk_and_gives_the_message_back(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    assert (env / "todo.md").read_text() == "buy milk\n"
    thread = _thread(at)
    at.button(key=f"undo-{thread}").click().run()
    at.button(key=f"undo-{thread}-yes").click().run()
    assert not at.exception
    [said] = [w.value for w in at.warning if "Undone" in w.value]
    assert "undo does not change them back: `write_file` path: todo.md" in said, said
    assert (env / "todo.md").exists()  # as it says: the file stays
    # The message is back in the chat input, to edit and send again.
    assert at.chat_input(key="prompt").proto.value == "write todo.md: buy milk"
    # A turn that only read says so.
    at.chat_input(key="prompt").set_value("list files").run()
    at.button(key=f"undo-{thread}").click().run()
    at.button(key=f"undo-{thread}-yes").click().run()
    assert any("It changed nothing on disk." in w.value for w in at.warning)


def test_threads_with_the_same_title_are_told_apart(env: Path) -> None:
    at = send(app(), "list files")
    first = _thread(at)
    at.query_params.clear()
    at.run()
    at = send(at, "list files")
    second = _thread(at)
    assert first != second
    one, two = at.button(key=f"thread-{first}").label, at.button(key=f"thread-{second}").label
    assert one != two
    assert f"id {first[:8]}" in one and f"id {second[:8]}" in two and "started" in one


def test_rename_and_delete(env: Path) -> None:
    at = send(app(), "list files")
    thread = at.query_params["thread"]
    thread = thread[0] if isinstance(thread, list) else thread
    form_title = next(t for t in at.text_input if t.label == "Title")
    form_title.input("Groceries")
    next(b for b in at.button if b.label == "Rename").click().run()
    assert at.button(key=f"thread-{thread}").label.startswith("Groceries")
    at.button(key=f"delete-{thread}").click().run()
    at.button(key=f"delete-{thread}-yes").click().run()
    assert not any(b.key == f"thread-{thread}" for b in at.button)


def test_each_approved_call_says_who_approved_it_and_from_where(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()
    at = send(at, "list files")  # the approved call is now in the history's window
    [row] = [m.value for m in at.markdown if "gh-tool" in m.value and "write_file" in m.value]
    summary = row.split("</summary>")[0]
    assert "✓ write_file · done" in summary
    assert f"approved by {html.escape(getpass.getuser())} via web" in summary, summary
    # A call that runs freely names no one.
    [free] = [m.value for m in at.markdown if "gh-tool" in m.value and "list_files" in m.value]
    assert "approved by" not in free


def test_settings_page(env: Path) -> None:
    at = send(app(), "list files")
    at.query_params["view"] = "settings"
    at.run()
    body = texts(at) + "".join(t.value.to_csv() for t in at.table)  # settings are tables
    assert "Workspace folder" in body and str(env) in body
    assert "Policy" in [h.value for h in at.subheader]


def test_settings_list_what_runs_freely_and_why(env: Path) -> None:
    # A rule of the person's own beside the defaults (every read-only tool, the allow list).
    (env.parent / "none.toml").write_text(
        '[policy.write_file]\nrules = [{ arg = "path", glob = "notes/*", mode = "allow" }]\n'
    )
    at = app()
    at.query_params["view"] = "settings"
    at.run()
    tables = {
        t.value.index.name: t.value.reset_index().to_dict("records")
        for t in at.table
        if t.value.index.name in ("Tool", "What")
    }
    policy = {row["Tool"]: row for row in tables["Tool"]}
    # Not "asks first" while `ls` runs freely: the exception is said, and listed.
    assert policy["run_command"]["When the model calls it"] == (
        "asks first, except commands on the allow list (below)"
    )
    assert policy["write_file"]["Rules on its arguments"] == (
        "runs without asking when path matches notes/*"
    )
    free = {row["What"]: row["Why"] for row in tables["What"]}
    assert free["every read_file call"] == "read-only tool"
    assert free["write_file: runs without asking when path matches notes/*"] == "a policy rule"
    assert free["run_command: ls …"].startswith("on the allow list ([tools] shell_allow)")
    assert "run_command: git status …" in free


def test_message_sent_during_a_run_is_queued_then_sent(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEHOUSE_MODEL_FACTORY", "tests.support.slow_model:make_model")
    monkeypatch.setenv("GATEHOUSE_SLOW_DELAY", "0.01")
    from gatehouse.graph.protocol.operations import SendMessage
    from gatehouse.ui.web.state import app_state

    at = app()
    state = app_state()
    handle = state.runner.submit(SendMessage("t-busy", "tell me a story"))
    at.query_params["thread"] = "t-busy"
    at.run()
    assert not at.chat_input(key="prompt").disabled  # typing during a run is allowed
    at.chat_input(key="prompt").set_value("and then list files").run()
    # Queued, not lost: sent when the first run ended (this script run followed both).
    assert not any("Not sent" in w.value for w in at.warning)
    handle.join(30)
    for _ in range(100):
        humans = [m.content for m in state.session.view("t-busy").messages if m.type == "human"]
        if len(humans) == 2 and state.runner.active("t-busy") is None:
            break
        time.sleep(0.1)
    assert humans == ["tell me a story", "and then list files"]
    at.run()
    assert "and then list files" in texts(at)


def test_a_fresh_page_follows_a_live_run_once_its_browser_has_drawn_it(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A browser that has not drawn this page's widgets yet (a reload during a run):
    # the page is drawn as it stands, Stop and the input included, and follows the run
    # live only when the browser asks (ui/web/live_run.py).
    monkeypatch.setenv("GATEHOUSE_MODEL_FACTORY", "tests.support.slow_model:make_model")
    monkeypatch.setenv("GATEHOUSE_SLOW_DELAY", "0.05")
    from gatehouse.graph.protocol.operations import SendMessage
    from gatehouse.ui.web.state import app_state

    at = app_page(TIMEOUT, drawn=False)
    at.run()
    state = app_state()
    handle = state.runner.submit(SendMessage("t-fresh", "tell me a story"))
    at.query_params["thread"] = "t-fresh"
    at.run()
    assert state.runner.active("t-fresh") is not None  # this script run did not wait for it
    assert at.button(key="stop").label.endswith("Stop")
    assert not at.chat_input(key="prompt").disabled
    assert "tell me a story" in texts(at) and "running…" in texts(at)
    assert "I understand requests like" not in texts(at)
    at.button(key="gh-live-go").click().run()
    # Followed live to its end in that script run, then drawn settled; asked only once.
    assert handle.done
    assert state.runner.active("t-fresh") is None
    assert "I understand requests like" in texts(at)
    assert not [b for b in at.button if b.key == "gh-live-go"]


def _thread(at: AppTest) -> str:
    value = at.query_params["thread"]
    return value[0] if isinstance(value, list) else value


def test_fork_from_earlier_message(env: Path) -> None:
    at = send(app(), "list files")
    at = send(at, "read notes.md")
    thread = _thread(at)
    assert not any(
        t.key and t.key.startswith("fork-text-") for t in at.text_area
    )  # editor only on demand
    at.button(key=f"fork-{thread}-0").click().run()
    at.text_area(key=f"fork-text-{thread}-0").input("read notes.md").run()
    at.checkbox(key=f"fork-sure-{thread}-0").check().run()
    at.button(key=f"fork-go-{thread}-0").click().run()
    user_bubbles = [c for c in at.get("chat_message") if c.name == "user"]
    assert [said(c) for c in user_bubbles] == ["read notes.md"]
    assert "list_files" not in texts(at)
    assert "hello notes" in texts(at)
    # The first message now has two versions: `< 2/2 >` on it, and the title follows.
    assert '<span class="gh-branch">2/2</span>' in texts(at)
    assert at.header[0].value == "read notes.md"
    assert at.button(key=f"branch-{thread}-0-next").disabled
    at.button(key=f"branch-{thread}-0-prev").click().run()
    assert not at.exception and not at.warning
    user_bubbles = [c for c in at.get("chat_message") if c.name == "user"]
    assert [said(c) for c in user_bubbles] == ["list files", "read notes.md"]
    assert '<span class="gh-branch">1/2</span>' in texts(at) and "list_files" in texts(at)
    assert at.header[0].value == "list files"
    at.button(key=f"branch-{thread}-0-next").click().run()
    user_bubbles = [c for c in at.get("chat_message") if c.name == "user"]
    assert [said(c) for c in user_bubbles] == ["read notes.md"]


def test_every_message_has_a_copy_button_with_its_text(env: Path) -> None:
    at = send(app(), "list files")
    buttons = [m.value for m in at.markdown if 'class="gh-copy"' in str(m.value)]
    assert len(buttons) == 2  # the message and the answer
    assert 'data-copy="list files"' in buttons[0]
    assert "notes.md" in buttons[1] and "&#10;" not in buttons[0]


def test_model_error_is_readable_with_retry(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEHOUSE_MODEL_FACTORY", "tests.support.slow_model:make_flaky_model")
    monkeypatch.setenv("GATEHOUSE_DB", str(env.parent / "flaky.db"))
    monkeypatch.setenv(
        "GATEHOUSE_MODEL_MAX_RETRIES", "0"
    )  # else Gatehouse's own retry hides the failure
    at = send(app(), "list files")
    assert not at.exception
    assert any("Could not reach the model server" in e.value for e in at.error)
    at.button(key="retry").click().run()
    assert not at.exception
    assert "list_files · done" in texts(at)
    assert not at.error


def _submit(at: AppTest) -> AppTest:
    return at.button(key=next(b.key for b in at.button if b.key.endswith("-submit"))).click().run()


def test_one_decision_per_call_in_one_card(env: Path) -> None:
    at = send(app(), "write a.md: one then write b.md: two")
    assert "Approval needed · 2 calls" in texts(at)
    radios = [r for r in at.radio if r.key and r.key.endswith("-choice")]
    assert len(radios) == 2
    assert [r.value for r in radios] == [None, None]  # a multi-call card starts undecided
    _submit(at)
    assert any("choose a decision for call 1, 2" in e.value for e in at.error)
    radios[0].set_value("approve").run()
    radios = [r for r in at.radio if r.key and r.key.endswith("-choice")]
    radios[1].set_value("reject").run()
    _submit(at)
    assert (env / "a.md").read_text() == "one\n"
    assert not (env / "b.md").exists()
    assert "write_file · done" in texts(at) and "write_file · rejected" in texts(at)


def test_always_allow_in_this_thread(env: Path) -> None:
    at = send(app(), "write a.md: one")
    grant = next(r for r in at.radio if r.key and r.key.endswith("-grant"))
    assert grant.value == "ask"  # nothing is granted unless chosen
    assert grant.options == [
        "No: ask again next time",
        "Always allow \\`write\\_file\\` of exactly the file \\`a.md\\` in this thread",
        "Always allow the whole tool: every \\`write\\_file\\` call in this thread, whatever its arguments",
    ]
    grant.set_value("narrow").run()
    _submit(at)
    at = send(at, "write a.md: two")  # the same file: covered
    assert "Approval needed" not in texts(at)
    assert (env / "a.md").read_text() == "two\n"
    at = send(at, "write b.md: other")  # another file: asks
    assert "Approval needed" in texts(at)
    grant = next(r for r in at.radio if r.key and r.key.endswith("-grant"))
    grant.set_value("tool").run()
    _submit(at)
    at = send(at, "write c.md: three")  # the whole tool, chosen explicitly
    assert "Approval needed" not in texts(at)
    assert (env / "c.md").read_text() == "three\n"


def test_open_thread_by_id(env: Path) -> None:
    first = send(app(), "list files")
    thread = _thread(first)
    at = app()
    at.text_input(key="open-id").input("no-such-thread")
    next(b for b in at.button if b.label == "Open").click().run()
    assert any("No thread" in e.value for e in at.error)
    at.text_input(key="open-id").input(thread)
    next(b for b in at.button if b.label == "Open").click().run()
    assert _thread(at) == thread
    assert "notes.md" in texts(at)


def test_storage_failure_is_a_readable_page(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEHOUSE_DB", str(env))  # a folder, not a database file
    at = app()
    assert not at.exception
    assert any("cannot show this page right now" in e.value for e in at.error)
    assert "Trying again every" in texts(at)  # it retries by itself (ui/web/unsent.py)
    assert any(b.key == "retry-page" for b in at.button)
    assert "Traceback" not in texts(at)


# -- issue 19: wrong or lost decisions, staleness, polish ------------------------------------
def _card_key(at: AppTest) -> str:
    return next(b.key for b in at.button if b.key.endswith("-submit")).removesuffix("-submit")


def test_approve_undecided_keeps_an_edited_call(env: Path) -> None:
    at = send(app(), "write a.md: one then write b.md: two")
    card = _card_key(at)
    at.radio(key=f"{card}-0-choice").set_value("edit").run()
    at.text_area(key=f"{card}-0-args").input('{"path": "a.md", "content": "EDITED\\n"}').run()
    # The button says what it does: only the undecided call is approved.
    button = at.button(key=f"{card}-all")
    assert button.label == "Approve the 1 undecided (1 of 2)"
    button.click().run()
    assert not at.exception
    assert (env / "a.md").read_text() == "EDITED\n"
    assert (env / "b.md").read_text() == "two\n"


def test_approve_undecided_keeps_a_rejection(env: Path) -> None:
    at = send(app(), "write a.md: one then write b.md: two")
    card = _card_key(at)
    assert at.button(key=f"{card}-all").label == "Approve all (2 of 2)"
    at.radio(key=f"{card}-1-choice").set_value("reject").run()
    at.button(key=f"{card}-all").click().run()
    assert (env / "a.md").read_text() == "one\n"
    assert not (env / "b.md").exists()


def test_single_call_card(env: Path) -> None:
    at = send(app(), "write todo.md: buy milk")
    card = _card_key(at)
    assert not any(b.key.endswith("-all") for b in at.button)  # no "Approve all" for one call
    assert at.button(key=f"{card}-submit").label == "Approve"
    captions = [c.value for c in at.caption]
    assert "Tool execution requires approval" not in captions
    assert any(c.startswith("Create or overwrite a text file") for c in captions), (
        captions
    )  # the tool's own words


def test_delete_is_riskier_than_write(env: Path) -> None:
    at = send(app(), "delete notes.md")
    assert "risk: delete" in texts(at) and ":red-badge[risk: delete]" in texts(at)


def test_edit_preview_shows_the_edited_arguments(env: Path) -> None:
    (env / "todo.md").write_text("old line\n")
    at = send(app(), "write todo.md: buy milk")
    card = _card_key(at)
    assert any("+buy milk" in c.value for c in at.code)
    at.radio(key=f"{card}-0-choice").set_value("edit").run()
    at.text_area(key=f"{card}-0-args").input('{"path": "todo.md", "content": "EDITED\\n"}').run()
    assert "preview of the edited call" in [c.value for c in at.caption]
    diffs = [c.value for c in at.code if c.language == "diff"]
    assert diffs and "+EDITED" in diffs[0] and "+buy milk" not in diffs[0]


def test_stale_tab_says_who_decided(env: Path) -> None:
    tab_a = send(app(), "write todo.md: buy milk")
    thread = _thread(tab_a)
    tab_b = app_page(TIMEOUT)
    tab_b.query_params["thread"] = thread
    tab_b.run()
    card = _card_key(tab_b)
    tab_b.radio(key=f"{card}-0-choice").set_value("reject").run()
    tab_b.text_input(key=f"{card}-0-reason").input("not today").run()
    _submit(tab_a)  # tab A approves while tab B is still writing its reason
    assert (env / "todo.md").read_text() == "buy milk\n"
    tab_b.button(key=f"{card}-submit").click().run()
    notices = [w.value for w in tab_b.warning]
    # Who decided: the signed-in identity (AppTest's trusted local path: the OS user).
    who = getpass.getuser()
    assert any(
        "Your decision was not used" in n and f"`write_file` approved by {who} via web" in n
        for n in notices
    ), notices


def test_interrupted_thread_disables_the_input_and_offers_retry(env: Path) -> None:
    from gatehouse.ui.web.state import app_state

    at = send(app(), "list files")
    thread = _thread(at)
    # What a process killed mid-run leaves: status "running" and no live lease.
    app_state().session.storage.index.touch(thread, status="running")
    at.run()
    box = at.chat_input(key="prompt")
    assert box.disabled and "interrupted" in box.placeholder
    assert any(b.key == "retry" for b in at.button)


def test_tool_rows_keep_line_breaks_and_say_what_has_not_run(env: Path) -> None:
    (env / "more.md").write_text("x\n")
    at = send(app(), "list files")
    rows = [m.value for m in at.markdown if "gh-tool" in m.value]
    assert rows and "list_files · done" in rows[0]
    assert "&#10;" in rows[0] and "notes.md" in rows[0]  # one line per file, in a gh-pre block
    at = send(at, "write todo.md: buy milk")
    waiting = [m.value for m in at.markdown if "gh-tool" in m.value][-1]
    assert "write_file · waiting for your decision" in waiting and "✓" not in waiting


def test_input_hint_and_selected_thread_time(env: Path) -> None:
    at = app()
    assert "read notes.md" not in at.chat_input(key="prompt").placeholder
    at = send(at, "list files")
    thread = _thread(at)
    label = at.button(key=f"thread-{thread}").label
    assert "just now" in label and ":gray[" not in label  # readable on the selected button


def test_regenerate_the_last_answer(env: Path) -> None:
    from gatehouse.ui.web.state import app_state

    at = send(app(), "list files")
    thread = _thread(at)
    before = app_state().session.view(thread).messages
    at.button(key="regenerate").click().run()
    assert not at.exception
    after = app_state().session.view(thread).messages
    assert [m.type for m in after] == [m.type for m in before]  # the same turn, asked again
    assert after[-1].id != before[-1].id  # a new answer
    assert "list_files · done" in texts(at)


def test_card_is_read_only_for_someone_not_among_the_tools_approvers(env: Path) -> None:
    (env.parent / "none.toml").write_text(
        '[policy.write_file]\nmode = "ask"\napprovers = ["ana@example.com"]\n'
    )
    at = send(app(), "write barred.md: nope")
    shown = texts(at)
    assert "Read-only: only these people may decide" in shown and "ana@example.com" in shown
    assert f"You are signed in as {getpass.getuser()}" in shown
    assert not [b for b in at.button if str(b.key or "").endswith("-submit")]
    assert not (env / "barred.md").exists()
