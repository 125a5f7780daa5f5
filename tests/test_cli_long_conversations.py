"""The terminal's commands for long conversations (issue 22), as a script runs them:
`undo [--force]`, `fork --at N`, `compact`, `output`, `export --json` / `import`, and
`audit [--thread ID] [--json]`, on the offline demo model."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from tests.test_cli import env, gh, gh_json  # noqa: F401  (env is a fixture)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def test_undo_refused_while_paused_then_forced_compact_and_fork(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    thread = gh_json(env, "send", "write todo.md: buy milk", code=3)["thread_id"]
    refused = gh(env, "undo", thread, code=3)
    assert "waiting for a decision on write_file" in refused.stderr and "--force" in refused.stderr
    assert gh_json(env, "pending")[0]["thread_id"] == thread  # nothing changed
    assert gh_json(env, "undo", thread, "--force") == {"thread_id": thread, "removed": 2}
    assert gh_json(env, "pending") == []

    for text in ("list files", "list files", "list files"):
        gh_json(env, "send", "-t", thread, text)
    compacted = gh_json(env, "compact", thread)
    assert compacted["compacted"] and compacted["messages_removed"] == 4
    assert compacted["tokens_after"] < compacted["tokens_before"]
    shown = gh_json(env, "show", thread)["messages"]
    assert shown[0]["summary"] and "The person asked" in shown[0]["content"]
    # `show` numbers user messages: #N is what fork --at takes.
    assert "#1 you ▸ list files" in gh(env, "show", thread, code=0).stdout

    (tmp_path / "ws" / "notes.md").write_text("oat milk\n")
    forked = gh_json(env, "fork", thread, "read notes.md", "--at", "1")
    assert forked["status"] == "completed" and "oat milk" in forked["final_text"]
    assert forked["message_id"] == gh_json(env, "show", thread)["messages"][-1]["id"]
    # The fork goes back to before message #1 arrived: before the compaction too, so
    # the first turn is there verbatim again, then the new message.
    after = gh_json(env, "show", thread)["messages"]
    assert [m["content"] for m in after if m["role"] == "user"] == ["list files", "read notes.md"]
    assert not any(m.get("summary") for m in after)


def test_export_import_round_trip_output_and_audit(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    thread = gh_json(env, "send", "write todo.md: buy milk", code=3)["thread_id"]
    approved = gh_json(env, "approve", thread, "--always")
    assert approved["status"] == "completed" and approved["final_text"].startswith("[Demo model (offline)] Here is")

    big = "".join(f"line {i}\n" for i in range(3_000))
    (tmp_path / "ws" / "big.txt").write_text(big)
    read = gh_json(env, "send", "-t", thread, "read big.txt")
    [result] = read["tools"]
    assert result["offloaded"] and result["total_chars"] == len(big) and len(result["output"]) < 2_500
    assert gh(env, "output", thread, result["call_id"], code=0).stdout == big

    exported = tmp_path / "thread.json"
    gh(env, "export", thread, "--json", "-o", str(exported), code=0)
    original = gh_json(env, "show", thread)["messages"]
    # The same database: the id is taken, so the import gets a new one.
    copy = gh_json(env, "import", str(exported))
    assert copy["thread_id"] != thread and copy["messages"] == len(original)
    assert gh_json(env, "show", copy["thread_id"])["messages"] == original
    assert gh(env, "output", copy["thread_id"], result["call_id"], code=0).stdout == big
    # Another database: the exported id.
    other = str(tmp_path / "other.db")
    assert gh_json(env, "import", str(exported), "--db", other)["thread_id"] == thread
    assert gh_json(env, "show", thread, "--db", other)["messages"] == original
    broken = json.loads(exported.read_text())
    broken["lc_messages"] = [m for m in broken["lc_messages"] if m["type"] != "tool"]
    exported.write_text(json.dumps(broken))
    refused = gh(env, "import", str(exported), code=2)
    assert "import refused, nothing written" in refused.stderr and "tool calls without results" in refused.stderr

    [record] = gh_json(env, "audit", "--thread", thread)
    assert (record["tool"], record["decision"], record["always_allow"]) == ("write_file", "approve", "*")
    assert (record["source"], record["actor"]) == ("terminal", getpass.getuser())
    assert record["args"] == {"path": "todo.md", "content": "buy milk\n"}
    text = gh(env, "audit", code=0).stdout
    assert "write_file  approve  by " in text and "always allow: *" in text
    # The record outlives the thread.
    gh(env, "delete", thread, code=0)
    assert [r["tool_call_id"] for r in gh_json(env, "audit", "--thread", thread)] == [record["tool_call_id"]]
