"""One vocabulary for decisions and outcomes (issue 57, item 6): the web app, the
terminal, the decision log, confirmations and late-answer refusals read their words
from graph/protocol/wording.py, and none shows a raw decision value."""

from __future__ import annotations

import ast
import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from gatehouse.graph.protocol.decisions import DecisionRecord, who_decided
from gatehouse.graph.protocol.wording import DECIDED, RUN_ENDED, WILL_DO, decided

ROOT = Path(__file__).resolve().parent.parent
# The front-end modules that used to keep their own copy of these words.
USERS = [
    "ui/web/approval.py",
    "ui/web/audit.py",
    "ui/term/decisions.py",
    "ui/term/render.py",
    "graph/agent/late_answers.py",
    "graph/protocol/decisions.py",
]


def _record(decision: str, question: str = "review") -> DecisionRecord:
    return DecisionRecord(
        thread_id="t1",
        tool_call_id="c1",
        tool="write_file",
        args={"path": "a.md"},
        decision=decision,
        question=question,
        decided_at=time.time(),
        actor="ana",
        source="terminal",
    )


@pytest.mark.parametrize("path", USERS)
def test_no_front_end_keeps_its_own_word_table(path: str) -> None:
    """No dict literal maps decision values to words outside the one table."""
    tree = ast.parse((ROOT / path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            values = {v.value for v in node.values if isinstance(v, ast.Constant)}
            assert not ({"approve", "reject"} <= keys and values & set(DECIDED.values())), path
            assert not ({"cancelled", "stopped"} <= keys), path


def test_every_decision_the_log_can_hold_has_words() -> None:
    from gatehouse.graph.protocol.decisions import ALWAYS_ALLOWED, AUTO_APPROVE, GRANT, REVOKE
    from gatehouse.graph.protocol.pauses import DECISION_TYPES, OUTCOME_CHOICES

    for value in (*DECISION_TYPES, *OUTCOME_CHOICES, AUTO_APPROVE, ALWAYS_ALLOWED, GRANT, REVOKE):
        assert value in DECIDED and "_" not in DECIDED[value], value
    for value in (*DECISION_TYPES, *OUTCOME_CHOICES):
        assert value in WILL_DO, value
    assert decided("some_new_kind") == "some new kind"


def test_the_terminal_log_shows_words_not_raw_values() -> None:
    from gatehouse.ui.term.render import render_audit

    out = io.StringIO()
    render_audit(Console(file=out, width=200), [_record("always_allowed", "standing")])
    shown = out.getvalue()
    assert "always_allowed" not in shown and "always allowed" in shown


def test_the_web_log_and_who_decided_use_the_same_words() -> None:
    from gatehouse.ui.web.audit import _decision

    assert _decision(_record("edit"), whole=True) == "write_file · approved with edits"
    assert _decision(_record("always_allowed", "standing"), whole=True) == (
        "write_file · always allowed"
    )
    assert who_decided([_record("edit")]).startswith("approved with edits write_file by ana")  # type: ignore[union-attr]


def test_a_run_a_person_stopped_reads_the_same_in_the_terminal_and_on_the_web() -> None:
    from gatehouse.graph.protocol import events as ev
    from gatehouse.ui.term.render import EventRenderer

    out = io.StringIO()
    EventRenderer(Console(file=out, width=200)).finished(
        ev.RunFinished(thread_id="t", status="cancelled", reason="Stopped by the person.")
    )
    assert out.getvalue().startswith(f"■ run {RUN_ENDED['cancelled']}")
    assert "cancelled" not in out.getvalue()
    web_badges = (ROOT / "ui/web/threads.py").read_text()
    assert '"cancelled": " :gray-badge[stopped]"' in web_badges
