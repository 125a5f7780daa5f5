"""The gate (graph/agent/gate.py) answers "may this call run?" with one typed verdict,
and evaluates the policy once per call per run: routing computes a call's verdict,
the review and run_tool reuse it; a new run (a resume) evaluates afresh, and other
grants are another question. The checks that hold on every path (a forged `Send`, a
state edit, a raw `Command`) are in tests/test_gate_every_path.py and
tests/test_gate_matrix.py; they run against this same gate.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from gatehouse.graph import ScriptedModel, ai, build_graph, tool_call
from gatehouse.graph.agent.authority import record_of
from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.gate import (
    Ask,
    AutoApproved,
    Decided,
    Denied,
    Invalid,
    RunFree,
    gate_reads,
    judge,
    keep_read,
    policy_verdict,
    task_for,
)
from gatehouse.graph.agent.hooks import HookSet
from gatehouse.graph.agent.model_node import own_call_ids
from gatehouse.graph.agent.policy import GRANTED, Grant, Policy
from gatehouse.graph.protocol.answers import Approve
from gatehouse.graph.protocol.decisions import GRANT, GRANT_QUESTION, REVOKE, DecisionRecord
from gatehouse.graph.store import open_storage
from tests.support.counting_tools import make_counting_tools, runs


class _Runtime:
    def __init__(self) -> None:
        self.context = RunContext()


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every call the policy evaluates, in order."""
    seen: list[str] = []
    evaluate = Policy.evaluate

    def counted(self: Policy, name: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(name)
        return evaluate(self, name, *args, **kwargs)

    monkeypatch.setattr(Policy, "evaluate", counted)
    return seen


def _turn(tmp_path: Path, names: list[str]) -> tuple[Any, Any, dict[str, Any]]:
    storage = open_storage(str(tmp_path / "g.db"))
    calls = [tool_call(n, {"label": f"l{i}"}, f"c{i}") for i, n in enumerate(names)]
    graph = build_graph(
        model=ScriptedModel(script=[ai("go", *calls), "Done."]),
        tools=make_counting_tools(tmp_path / "count"),
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
    )
    return graph, storage, {"configurable": {"thread_id": "t"}}


def test_a_turn_of_three_free_calls_evaluates_the_policy_three_times(
    tmp_path: Path, evaluations: list[str]
) -> None:
    graph, _, cfg = _turn(tmp_path, ["bump_free"] * 3)
    graph.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
    assert runs(tmp_path / "count") == {"l0": 1, "l1": 1, "l2": 1}
    # Routing judged each call; run_tool reused the verdict (it used to evaluate twice more).
    assert evaluations == ["bump_free"] * 3


def test_a_gated_turn_evaluates_once_per_call_per_run(
    tmp_path: Path, evaluations: list[str]
) -> None:
    graph, _, cfg = _turn(tmp_path, ["bump"] * 3)
    graph.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
    assert (
        graph.get_state(cfg).interrupts and evaluations == ["bump"] * 3
    )  # routing; the review reused it
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}] * 3}), cfg)
    assert runs(tmp_path / "count") == {"l0": 1, "l1": 1, "l2": 1}
    # The resume is a new run: the review asks afresh what it asked, run_tool reuses that.
    assert evaluations == ["bump"] * 6


def test_a_verdict_is_reused_only_for_the_same_call_grants_and_run(
    tmp_path: Path, evaluations: list[str]
) -> None:
    tools = {t.name: t for t in make_counting_tools(tmp_path / "count")}
    deps = AgentDeps(
        model=None,
        tools=tools,
        policy=Policy(),
        hooks=HookSet(None),
        system_prompt=None,
        max_model_calls=5,
    )
    call = tool_call("bump", {"label": "x"}, "c1")
    run = _Runtime()
    assert policy_verdict(call, deps, "t", [], run).mode == "ask"  # type: ignore[arg-type]
    assert policy_verdict(call, deps, "t", [], run).mode == "ask"  # type: ignore[arg-type]
    assert len(evaluations) == 1
    # A grant given since is another question: evaluated, and it lets the call run.
    granted = policy_verdict(call, deps, "t", [Grant("bump")], run)  # type: ignore[arg-type]
    assert granted.mode == "allow" and granted.reason == GRANTED and granted.grant == Grant("bump")
    # Other arguments under the same id, another thread, another run: evaluated again.
    policy_verdict({**call, "args": {"label": "y"}}, deps, "t", [], run)  # type: ignore[arg-type, typeddict-item]
    policy_verdict(call, deps, "other", [], run)  # type: ignore[arg-type]
    assert policy_verdict(call, deps, "t", [], _Runtime()).mode == "ask"  # type: ignore[arg-type]
    assert len(evaluations) == 5


def test_the_gate_answers_with_a_typed_verdict(tmp_path: Path) -> None:
    tools = {t.name: t for t in make_counting_tools(tmp_path / "count")}
    storage = open_storage(str(tmp_path / "g.db"))
    policy = Policy.from_mapping(
        {
            "touch_idem": {"mode": "ask", "approvers": ["ana@example.com"]},
            "bump_free": {
                "mode": "allow",
                "rules": [{"arg": "label", "glob": "secret*", "mode": "deny"}],
            },
        }
    )
    deps = AgentDeps(
        model=None,
        tools=tools,
        policy=policy,
        hooks=HookSet(None),
        system_prompt=None,
        max_model_calls=5,
        journal=storage.journal,
        decisions=storage.decisions,
    )
    run = _Runtime()

    def verdict(name: str, args: dict[str, Any], call_id: str = "c1", **how: Any) -> Any:
        return judge(tool_call(name, args, call_id), deps, "t", [], run, **how)  # type: ignore[arg-type]

    assert verdict("bump_free", {"label": "x"}) == RunFree(None)
    assert verdict("bump_free", {"label": "secret-1"}) == Denied()
    assert isinstance(verdict("bump", {}), Invalid)  # `label` is missing: nobody is asked
    asked = verdict("bump", {"label": "x"})
    assert (
        isinstance(asked, Ask) and task_for(tool_call("bump", {"label": "x"}, "c1"), asked) is None
    )  # type: ignore[arg-type]
    assert verdict("bump", {"label": "x"}, auto="session") == AutoApproved("session")
    # Auto-approve is someone's switch: a tool with named approvers still asks.
    assert isinstance(verdict("touch_idem", {"label": "x"}, auto="session"), Ask)
    # A recorded approval of exactly this call: it goes on as decided, outside the review.
    approved = tool_call("bump", {"label": "x"}, "c9")
    assert storage.decisions is not None
    storage.decisions.record(
        [
            record_of(
                "t",
                "review",
                approved,
                Approve(type="approve"),  # type: ignore[arg-type]
                source="test",
                actor=None,
            )
        ]
    )
    decided = verdict("bump", {"label": "x"}, "c9")
    assert isinstance(decided, Decided) and decided.task["mode"] == "run"
    # ... but not for a call that reuses its id with other arguments, nor in the review itself.
    assert isinstance(verdict("bump", {"label": "other"}, "c9"), Ask)
    assert isinstance(verdict("bump", {"label": "x"}, "c9", reviewing=True), Ask)


def test_the_log_is_read_once_per_step_and_a_grant_from_elsewhere_reaches_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tasks of one run step share one read of the decision log; a grant or revoke
    recorded by another process reaches the next step, and the next run even when it is
    given the same context; a decision this run records reaches the next step's calls
    as read in its own transaction."""
    tools = {t.name: t for t in make_counting_tools(tmp_path / "count")}
    storage = open_storage(str(tmp_path / "g.db"))
    log = storage.decisions
    assert log is not None
    reads: list[list[str]] = []
    read = log.gate_reads
    monkeypatch.setattr(log, "gate_reads", lambda t, ids: reads.append(list(ids)) or read(t, ids))
    deps = AgentDeps(
        model=None,
        tools=tools,
        policy=Policy(),
        hooks=HookSet(None),
        system_prompt=None,
        max_model_calls=5,
        decisions=log,
    )
    run = _Runtime()

    def config(step: int) -> Any:
        return {"configurable": {"thread_id": "t"}, "metadata": {"langgraph_step": step}}

    def gate(step: int, call_id: str = "c1") -> tuple[list[Grant], list[Any]]:
        return gate_reads({}, deps, "t", [call_id], config(step), run)  # type: ignore[arg-type]

    elsewhere = open_storage(str(tmp_path / "g.db")).decisions
    assert elsewhere is not None

    def standing(decision: str) -> DecisionRecord:
        return DecisionRecord(
            thread_id="t",
            question=GRANT_QUESTION,
            tool_call_id=f"g-{decision}",
            tool="bump",
            decision=decision,
            args={},
            always_allow="*",
            decided_at=time.time(),
        )

    keep_read(config(2), run, "t", ["c1", "c2"])  # routing: the next step asks of both
    assert gate(3) == ([], []) and gate(3, "c2") == ([], []) and reads == [["c1", "c2"]]
    elsewhere.record([standing(GRANT)])
    assert gate(3)[0] == []  # one step, one state of the log
    assert gate(4)[0] == [Grant("bump")] and len(reads) == 2
    elsewhere.record([standing(REVOKE)])
    run.context.forget_reads()  # a new run given the same context
    assert gate(4)[0] == [] and len(reads) == 3
    # A decision recorded here: the next step's call reads it from its transaction.
    call = tool_call("bump", {"label": "x"}, "c5")
    approve = record_of("t", "review", call, Approve(type="approve"), source="t", actor=None)  # type: ignore[arg-type]
    keep_read(config(6), run, "t", ["c5"], log.record_and_read([approve]))
    assert [r.decision for r in gate(7, "c5")[1]] == ["approve"] and len(reads) == 3


def test_the_replys_call_id_check_is_its_steps_gate_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model node checks a reply's call ids against the log and the journal in the
    read of the grants, which the routing of that step then uses: an id of a decided or
    journaled call gets a new one, and the step's gate reads no more."""
    tools = {t.name: t for t in make_counting_tools(tmp_path / "count")}
    storage = open_storage(str(tmp_path / "g.db"))
    log, journal = storage.decisions, storage.journal
    assert log is not None and journal is not None
    decided = tool_call("bump", {"label": "x"}, "c9")
    granted = DecisionRecord(
        thread_id="t",
        question=GRANT_QUESTION,
        tool_call_id="g1",
        tool="bump",
        decision=GRANT,
        args={},
        always_allow="*",
        decided_at=time.time(),
    )
    approve = record_of("t", "review", decided, Approve(type="approve"), source="t", actor=None)  # type: ignore[arg-type]
    log.record([granted, approve])
    journal.start("t", tool_call("bump", {"label": "y"}, "j1"))
    reads: list[list[str]] = []
    read = log.gate_reads
    monkeypatch.setattr(log, "gate_reads", lambda t, ids: reads.append(list(ids)) or read(t, ids))
    deps = AgentDeps(
        model=None,
        tools=tools,
        policy=Policy(),
        hooks=HookSet(None),
        system_prompt=None,
        max_model_calls=5,
        decisions=log,
        journal=journal,
    )
    run = _Runtime()
    config: Any = {"configurable": {"thread_id": "t"}, "metadata": {"langgraph_step": 3}}
    calls = [tool_call("bump", {"label": "z"}, i) for i in ("c9", "j1", "new")]
    reply = own_call_ids(ai("", *calls), [], [], deps, config, run)  # type: ignore[arg-type]
    ids = [c["id"] for c in reply.tool_calls]
    assert ids[0] not in ("c9", "j1") and ids[1] not in ("c9", "j1") and ids[2] == "new"
    assert gate_reads({}, deps, "t", ids, config, run) == ([Grant("bump")], [])  # type: ignore[arg-type]
    assert reads == []
    config["metadata"]["langgraph_step"] = 4
    assert gate_reads({}, deps, "t", ids, config, run)[0] == [Grant("bump")]  # type: ignore[arg-type]
    assert reads == [sorted(ids)]
