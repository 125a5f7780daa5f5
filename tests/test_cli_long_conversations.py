"""The terminal's commands for long conversations (issue 22), as a script runs them:
`undo [--force]`, `fork --at N`, `compact`, `output`, `export --json` / `import`, and
`audit [--thread ID] [--json]`, on the offline demo model.

Threads are set up through the Session on the same database (each command is a
process of its own, seconds each); the commands under test run as subprocesses.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gatehouse.graph import Session, Settings, open_session
from gatehouse.graph.protocol.operations import Delete
from tests.test_cli import env, gh, gh_json  # noqa: F401  (env is a fixture)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@contextmanager
def session_on(env: dict[str, str]) -> Iterator[Session]:  # noqa: F811
    session = open_session(Settings(db=env["GATEHOUSE_DB"], workspace=env["GATEHOUSE_WORKSPACE"]))
    try:
        yield session
    finally:
        session.close()


def test_undo_refused_while_paused_then_forced_compact_and_fork(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    with session_on(env) as session:
        thread = session.new_thread_id()
        for text in ("list files", "list files", "list files", "write todo.md: buy milk"):
            session.send(thread, text).collect()
        assert session.view(thread).pending is not None

    refused = gh(env, "undo", thread, code=3)
    assert "waiting for a decision on write_file" in refused.stderr and "--force" in refused.stderr
    assert "force=True" not in refused.stderr
    assert gh_json(env, "undo", thread, "--force") == {"thread_id": thread, "removed": 2, "turn": 4}

    compacted = gh_json(env, "compact", thread)
    assert compacted["compacted"] and compacted["messages_removed"] == 4
    assert compacted["tokens_after"] < compacted["tokens_before"]
    # `show` keeps the whole history, marks where the model's view was summarised and
    # numbers user messages: #N is what fork --at takes.
    shown = gh(env, "show", thread, code=0).stdout
    assert (
        "summary ▸ " in shown and "#1 you ▸ list files" in shown and "#2 you ▸ list files" in shown
    )
    assert shown.index("#1 you") < shown.index("summary ▸ ") < shown.index("#2 you")

    (tmp_path / "ws" / "notes.md").write_text("oat milk\n")
    forked = gh_json(env, "fork", thread, "read notes.md", "--at", "2")
    assert forked["status"] == "completed" and "oat milk" in forked["final_text"]
    with session_on(env) as session:
        after = session.view(thread).transcript
        assert forked["message_id"] == after[-1].id and session.view(thread).pending is None
    # The fork goes back to before message #1 arrived: before the compaction too, so
    # the first turn is there verbatim again, then the new message.
    assert [m.content for m in after if m.role == "user"] == ["list files", "read notes.md"]
    assert not any(m.summary for m in after)


def test_export_import_round_trip_output_and_audit(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    big = "".join(f"line {i}\n" for i in range(3_000))
    (tmp_path / "ws" / "big.txt").write_text(big)
    with session_on(env) as session:
        thread = session.new_thread_id()
        session.send(thread, "read big.txt").collect()
        session.send(thread, "write todo.md: buy milk").collect()
        [read] = [m for m in session.view(thread).transcript if m.offloaded]
    request = gh_json(env, "pending")[0]["interrupt_id"]
    approved = gh_json(env, "approve", thread, "--always", "--interrupt-id", request)
    assert approved["status"] == "completed" and approved["final_text"].startswith(
        "[Demo model (offline)] Here is"
    )
    assert gh(env, "output", thread, read.tool_call_id, code=0).stdout == big

    exported = tmp_path / "thread.json"
    gh(env, "export", thread, "--json", "-o", str(exported), code=0)
    # Another database: the exported id, equal messages, the stored output too.
    other = str(tmp_path / "other.db")
    # The "always allow" given with the approval stays behind: authority does not move.
    assert gh_json(env, "import", str(exported), "--db", other) == {
        "thread_id": thread,
        "messages": 8,
        "dropped": "dropped 1 grant: authority does not move between databases",
    }
    with session_on(env) as session, session_on({**env, "GATEHOUSE_DB": other}) as copy:
        assert copy.view(thread).messages == session.view(thread).messages
        assert copy.view(thread).tool_output(read.tool_call_id) == big
    # A file that would leave a call without its result is refused; nothing is written.
    broken = json.loads(exported.read_text())
    broken["lc_messages"] = [m for m in broken["lc_messages"] if m["type"] != "tool"]
    exported.write_text(json.dumps(broken))
    refused = gh(env, "import", str(exported), code=2)
    assert (
        "import refused, nothing written" in refused.stderr
        and "tool calls without results" in refused.stderr
    )

    [record] = gh_json(env, "audit", "--thread", thread)
    # --always is narrow: exactly the file approved.
    assert (record["tool"], record["decision"], record["always_allow"]) == (
        "write_file",
        "approve",
        "todo.md",
    )
    assert (record["source"], record["actor"]) == ("terminal", getpass.getuser())
    assert record["args"] == {"path": "todo.md", "content": "buy milk\n"}
    # The record outlives the thread.
    with session_on(env) as session:
        session.submit(Delete(thread))
    text = gh(env, "audit", code=0).stdout
    assert (
        f"{thread[:8]}  write_file  approved  by {getpass.getuser()} · terminal" in text
        and "always allow: todo.md" in text
    )


def test_branches_lists_versions_and_switch_moves_the_thread(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    with session_on(env) as session:
        thread = session.new_thread_id()
        session.send(thread, "list files").collect()
        session.send(thread, "read notes.md").collect()
    assert "never forked" in gh(env, "branches", thread, code=0).stdout
    gh_json(env, "fork", thread, "list all files", "--at", "1")

    listed = gh(env, "branches", thread, code=0).stdout
    assert (
        "#1  version 2/2" in listed
        and "1. list files" in listed
        and "▸ 2. list all files" in listed
    )
    [versions] = gh_json(env, "branches", thread)
    assert versions["label"] == "2/2" and versions["previews"] == ["list files", "list all files"]

    switched = gh_json(env, "switch", thread, "--at", "1", "--to", "1")
    assert switched == {"thread_id": thread, "at": 1, "version": 1, "versions": 2, "messages": 8}
    shown = gh(env, "show", thread, code=0).stdout
    assert "#1 you ▸ list files" in shown and "#2 you ▸ read notes.md" in shown
    # Mistakes are usage errors that change nothing.
    assert (
        "has no other versions"
        in gh(env, "switch", thread, "--at", "2", "--to", "1", code=2).stderr
    )
    assert (
        "versions 1 to 2, not 3"
        in gh(env, "switch", thread, "--at", "1", "--to", "3", code=2).stderr
    )
    assert (
        "has turns 1 to 2, not #0"
        in gh(env, "switch", thread, "--at", "0", "--to", "1", code=2).stderr
    )
    assert gh_json(env, "branches", thread)[0]["label"] == "1/2"
