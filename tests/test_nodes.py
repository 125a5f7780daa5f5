"""The agent's nodes called alone, with a state dict and their dependencies: no graph
run, no Session, no database (the way LangChain tests `after_model(state, Runtime())`)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Send

from gatehouse.graph import ScriptedModel, ai, tool_call
from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.finish import finish
from gatehouse.graph.agent.hooks import HookSet
from gatehouse.graph.agent.model_node import call_model
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.agent.routing import after_model, dispatch
from gatehouse.graph.agent.tool_node import run_call
from gatehouse.tools.base import gatehouse_tool

RAN: list[str] = []


@gatehouse_tool(risk="read")
def lookup(key: str) -> str:
    """Look a key up (free)."""
    RAN.append(key)
    return f"value of {key}"


@gatehouse_tool(risk="write")
def deploy(env: str) -> str:
    """Deploy (gated)."""
    RAN.append(env)
    return f"deployed {env}"


class Runtime:
    """What a node reads of LangGraph's runtime: the run's context."""

    def __init__(self, cancelled: bool = False) -> None:
        self.context = RunContext()
        if cancelled:
            self.context.cancel.set()


class MemoryJournal:
    """A journal in a dict: enough for the node, no database."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str, str], Any] = {}
        self.started: list[str] = []

    def find(self, thread_id: str, call: Any) -> Any:
        return self.rows.get(_key(thread_id, call))

    def get(self, thread_id: str, tool_call_id: str) -> Any:
        return next((r for k, r in self.rows.items() if k[:2] == (thread_id, tool_call_id)), None)

    def claim(self, thread_id: str, call: Any) -> Any:
        if (found := self.find(thread_id, call)) is None:
            self.started.append(call["id"])
        return found

    def restart(self, thread_id: str, call: Any, attempts: int) -> None:
        self.started.append(call["id"])

    def finish(self, thread_id: str, call: Any, result: ToolMessage) -> None:
        self.rows[_key(thread_id, call)] = _Finished(result)


def _key(thread_id: str, call: Any) -> tuple[str, str, str, str]:
    # Bound like the real journal: the id, the tool and the canonical arguments.
    return (thread_id, call["id"], call["name"], json.dumps(call["args"], sort_keys=True))


class _Finished:
    def __init__(self, result: ToolMessage) -> None:
        self.result = result
        self.started_at = 0.0
        self.attempts = 1
        self.finished = True


def deps(
    script: list[Any] | None = None, *, journal: Any = None, hooks: Any = None, max_calls: int = 5
) -> AgentDeps:
    tools = {t.name: t for t in (lookup, deploy)}
    return AgentDeps(
        model=ScriptedModel(script=script or []),
        tools=tools,
        policy=Policy.from_mapping(None),
        hooks=HookSet(hooks),
        system_prompt="be brief",
        max_model_calls=max_calls,
        journal=journal,
    )


CONFIG = {"configurable": {"thread_id": "t"}}


def test_model_node_starts_a_run_and_returns_the_reply_with_usage() -> None:
    state = {"messages": [HumanMessage("hi", id="h1")]}
    update = call_model(state, CONFIG, Runtime(), deps=deps(["hello there"]))
    [reply] = update["messages"]
    assert isinstance(reply, AIMessage) and reply.content == "hello there"
    assert update["run_message_id"] == "h1" and update["run_model_calls"] == 1
    assert update["usage"]["total_tokens"] > 0


def test_model_node_stops_at_the_model_call_limit_without_calling_the_model() -> None:
    state = {
        "messages": [HumanMessage("hi", id="h1")],
        "run_message_id": "h1",
        "run_model_calls": 5,
    }
    model_deps = deps(["never"])
    update = call_model(state, CONFIG, Runtime(), deps=model_deps)
    assert "limit of 5 model calls" in update["stop_reason"] and update["stop_kind"] == "stopped"
    assert model_deps.model.inputs == []


def test_model_node_stops_when_the_person_cancelled() -> None:
    update = call_model(
        {"messages": [HumanMessage("hi", id="h1")]},
        CONFIG,
        Runtime(cancelled=True),
        deps=deps(["x"]),
    )
    assert update["stop_kind"] == "cancelled"


def test_routing_sends_free_calls_to_their_own_task_and_gated_ones_to_review() -> None:
    turn = ai(
        "", tool_call("lookup", {"key": "a"}, "c1"), tool_call("deploy", {"env": "prod"}, "c2")
    )
    state = {"messages": [HumanMessage("go"), turn]}
    targets = after_model(state, CONFIG, deps=deps())
    sends = [t for t in targets if isinstance(t, Send)]
    assert [s.arg["call"]["id"] for s in sends] == ["c1"]
    assert sends[0].arg["moves_on"] is False  # the review moves the run on
    assert "review" in targets


def test_routing_ends_a_reply_without_calls_and_answers_calls_of_a_stopped_run() -> None:
    assert after_model(
        {"messages": [HumanMessage("hi"), AIMessage("bye")]}, CONFIG, deps=deps()
    ) == [END]
    turn = ai("", tool_call("deploy", {"env": "prod"}, "c2"))
    stopped = {"messages": [HumanMessage("go"), turn], "stop_reason": "budget"}
    [send] = dispatch(stopped, CONFIG, deps=deps())
    assert isinstance(send, Send) and send.arg["mode"] == "skip" and send.arg["note"] == "budget"


def test_tool_node_journals_a_side_effect_and_answers_it_from_the_journal_after() -> None:
    RAN.clear()
    journal = MemoryJournal()
    task = {"call": tool_call("deploy", {"env": "prod"}, "c9"), "mode": "run"}
    first = run_call(task, CONFIG, deps(journal=journal))
    assert RAN == ["prod"] and journal.started == ["c9"]
    assert first["messages"][0].content == "deployed prod"
    # Run again (a checkpoint that never saw the result): answered from the journal.
    again = run_call(task, CONFIG, deps(journal=journal))
    assert RAN == ["prod"] and again["messages"][0].content == "deployed prod"


def test_tool_node_refuses_a_denied_call_without_running_it() -> None:
    RAN.clear()
    out = run_call(
        {"call": tool_call("deploy", {"env": "prod"}, "c1"), "mode": "deny"}, CONFIG, deps()
    )
    [msg] = out["messages"]
    assert (
        RAN == []
        and msg.status == "error"
        and msg.additional_kwargs["gatehouse_status"] == "denied"
    )


def test_finish_turns_a_stop_reason_into_a_notice() -> None:
    command = finish({"messages": [], "stop_reason": "Out of budget."}, deps=deps())
    [notice] = command.update["messages"]
    assert notice.content == "Out of budget." and command.goto == END
