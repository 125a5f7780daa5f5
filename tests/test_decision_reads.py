"""The decision-log reads a page run makes on a long thread select only the rows they
need (issue 36): `Session.audit(thread, limit)` the last `limit` records and
`Session.grants` the "always allow" records. They answer exactly what reading the
thread's whole log answered, on a real SQLite file.
"""

from __future__ import annotations

from pathlib import Path

from gatehouse.graph import Settings, open_session
from gatehouse.graph.protocol.decisions import GRANT_QUESTION, REVOKE, DecisionRecord
from gatehouse.graph.store.decisions import grants_in_force


def record(thread: str, n: int, **extra: object) -> DecisionRecord:
    fields: dict[str, object] = {
        "thread_id": thread,
        "question": "review",
        "tool_call_id": f"call-{n}",
        "tool": "write_file",
        "decision": "approve",
        "args": {"path": f"f{n}.md"},
        "decided_at": 1000.0 + n,
        **extra,
    }
    return DecisionRecord(**fields)  # type: ignore[arg-type]


def test_narrow_decision_reads_answer_as_the_whole_log(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    session = open_session(Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws")))
    try:
        log = session.storage.decisions
        assert log is not None
        records = [record("t", n) for n in range(300)]
        records += [record("other", n) for n in range(20)]
        # Grants among them, one revoked later, one for another thread; two records
        # decided at the same moment (one decision on two calls).
        records += [
            record("t", 400, always_allow="*.md"),
            record("t", 401, tool="run_command", always_allow="ls *"),
            record(
                "t",
                402,
                tool="run_command",
                question=GRANT_QUESTION,
                decision=REVOKE,
                always_allow="ls *",
            ),
            record("other", 403, always_allow="*"),
            record("t", 404, tool_call_id="same-a"),
            record("t", 404, tool_call_id="same-b", decided_at=1404.0),
        ]
        log.record(records)
        whole = list(reversed(log.for_thread("t")))
        for limit in (1, 2, 3, 50, 1000):
            assert session.view("t").audit(limit) == whole[:limit]
        # The grants read (chain-vouched, this life) answer as the whole log folded.
        assert log.grants("t") == grants_in_force("t", log.for_thread("t"))
        assert [g.label for g in session.view("t").grants] == ["write_file:*.md"]
    finally:
        session.close()
