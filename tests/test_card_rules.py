"""The card rules every front end shares (graph/protocol): what a card shows of a value
(`shown`), which calls ask to confirm (`confirmation`), and the narrow "always allow"
(`narrow_grant`) — the last one checked against the graph through a Session, as a
person's tick of it would be: it covers its own command and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatehouse.graph import Settings, open_session
from gatehouse.graph.protocol.confirm import confirmation, to_confirm
from gatehouse.graph.protocol.display import shown
from gatehouse.graph.protocol.grant_scope import narrow_grant
from gatehouse.graph.protocol.operations import approve, edit, reject
from gatehouse.graph.protocol.pauses import ActionRequest


def test_shown_counts_exactly_what_it_hides() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 122))
    part = shown(text, lines=20)
    assert part.head.split("\n")[-1] == "line 20"
    assert part.hidden_lines == 101 and not part.complete
    assert part.hidden == f"101 more lines hidden ({len(text) - len(part.head):,} characters)"
    assert shown("short").complete and shown("short").hidden == ""


def test_a_long_line_says_it_goes_on_and_a_blank_run_is_counted() -> None:
    part = shown("x" * 5000 + "\nnext", chars=4000)
    assert part.hidden == "this line goes on (1,005 more characters, then 1 more line)"
    tail = shown("echo build-ok" + " " * 3000 + "; rm -rf ./*")
    assert tail.complete and tail.head == "echo build-ok ⟨3,000 spaces⟩ ; rm -rf ./*"


@pytest.mark.parametrize(
    ("name", "args", "risk", "asks"),
    [
        ("run_command", {"command": "ls"}, "execute", True),
        ("delete_file", {"path": "a.md"}, "delete", True),
        ("mcp_thing", {}, None, True),  # an undeclared risk may run anything
        ("write_file", {"path": "notes.md"}, "write", False),
        ("write_file", {"path": ".git/config"}, "write", True),
        ("write_file", {"path": "./a/../.GIT/hooks/pre-commit"}, "write", True),
        ("write_file", {"path": "sub/.bashrc"}, "write", True),
        ("write_file", {"path": ".gatehouse/policy.toml"}, "write", True),
        ("write_file", {"path": "gatehouse.toml"}, "write", True),
        ("write_file", {"path": ".vscode/tasks.json"}, "write", True),
        ("write_file", {"path": "Makefile"}, "write", True),
        ("move_file", {"source": "x.sh", "destination": ".git/hooks/post-checkout"}, "write", True),
        ("read_file", {"path": ".git/config"}, "read", False),
        ("http_request", {"url": "https://x"}, "network", False),
    ],
)
def test_one_confirmation_rule(name: str, args: dict, risk: str | None, asks: bool) -> None:
    assert (confirmation(name, args, risk) is not None) is asks


def test_an_answer_confirms_the_calls_it_runs_as_they_would_run() -> None:
    actions = [
        ActionRequest(name="write_file", args={"path": "a.md"}, risk="write"),
        ActionRequest(name="run_command", args={"command": "rm -rf x"}, risk="execute"),
    ]
    assert to_confirm(actions, [approve(), reject("no")]) == []
    edited = to_confirm(actions, [edit("write_file", {"path": ".git/config"}), approve()])
    assert [(c.index, c.args) for c in edited] == [
        (0, {"path": ".git/config"}),
        (1, {"command": "rm -rf x"}),
    ]


def test_narrow_grants_cover_only_what_they_say() -> None:
    seq = narrow_grant("run_command", {"command": "seq 1 3"})
    assert seq is not None and seq.pattern == "seq 1 3"
    assert narrow_grant("run_command", {"command": "ls *.md"}).pattern == "ls [*].md"  # type: ignore[union-attr]
    assert narrow_grant("run_command", {"command": "ls; rm -rf x"}) is None
    assert narrow_grant("run_command", {"command": "curl x", "network": True}) is None
    assert narrow_grant("write_file", {"path": "./notes/a.md"}).pattern == "notes/a.md"  # type: ignore[union-attr]
    assert narrow_grant("write_file", {"path": "../x"}) is None
    assert narrow_grant("move_file", {"source": "a", "destination": "b"}) is None


def test_a_narrow_command_grant_lets_rm_still_ask(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep\n")
    session = open_session(Settings(db=str(tmp_path / "gh.db"), workspace=str(tmp_path)))
    try:
        run = session.send(None, "run: seq 1 3")
        run.collect()
        scope = narrow_grant("run_command", {"command": "seq 1 3"})
        assert scope is not None and run.status == "awaiting_approval"
        session.resume(
            run.thread_id, {"decisions": [{"type": "approve", "always_allow": scope.pattern}]}
        ).collect()
        again = session.send(run.thread_id, "run: seq 1 3")
        again.collect()
        assert again.status == "completed"  # covered: no question
        rm = session.send(run.thread_id, "run: rm -f x")
        rm.collect()
        assert rm.status == "awaiting_approval"  # not covered
        assert [g.label for g in session.view(run.thread_id).grants] == ["run_command:seq 1 3"]
    finally:
        session.close()
    assert (tmp_path / "x").read_text() == "keep\n"
