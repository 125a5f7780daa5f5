"""Hooks (issue 4): points, order, flow control, errors, lifecycle, pause/resume."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.agent.hooks import (
    HookError,
    HookSet,
    current_point,
    hook,
    load_hook,
    normalise_hooks,
    run_hooks,
)
from gatehouse.graph.service.config import load_settings
from gatehouse.graph.store import open_storage

CALLS: list[str] = []


@tool
def deploy(service: str) -> str:
    """Deploy a service (asks a person)."""
    CALLS.append(f"deploy:{service}")
    return f"deployed {service}"


@tool
def lookup(key: str) -> str:
    """Look something up (runs freely)."""
    CALLS.append(f"lookup:{key}")
    return f"value of {key}"


TOOLS = [deploy, lookup]
POLICY = {"lookup": False, "deploy": True}


def make(
    tmp_path: Path, script: list[Any], hooks: Mapping[str, Any] | None = None
) -> tuple[Session, ScriptedModel]:
    CALLS.clear()
    model = ScriptedModel(script=script)
    storage = open_storage(str(tmp_path / "db"))
    graph = build_graph(
        model=model, tools=TOOLS, checkpointer=storage.checkpointer, policy=POLICY, hooks=hooks
    )
    return Session(graph, storage, TOOLS), model


class Counter:
    """A hook object that records where it ran."""

    def __init__(self, update: Mapping[str, Any] | None = None) -> None:
        self.seen: list[str | None] = []
        self.update = update

    def run(self, state: Mapping[str, Any]) -> Mapping[str, Any] | None:
        self.seen.append(current_point())
        return self.update


# -- running hooks ----------------------------------------------------------------


def test_hooks_run_in_order_and_each_sees_the_updates_before_it() -> None:
    order: list[str] = []

    @hook
    def first(state):
        order.append("first")
        return {"model_context": {"a": "one"}, "messages": [HumanMessage("added", id="h2")]}

    @hook
    def second(state):
        order.append("second")
        assert state["model_context"] == {"a": "one"}
        assert [m.content for m in state["messages"]] == ["hi", "added"]
        return {"model_context": {"b": "two"}}

    update = run_hooks([first, second], {"messages": [HumanMessage("hi", id="h1")]}, "before_llm")
    assert order == ["first", "second"]
    assert update["model_context"] == {"a": "one", "b": "two"}  # merged per key
    assert [m.content for m in update["messages"]] == ["added"]


def test_async_hooks_plain_functions_and_classes_are_accepted() -> None:
    class AsyncOnly:
        async def arun(self, state):
            await asyncio.sleep(0)
            return {"model_context": {"async": "yes"}}

    @hook
    async def async_fn(state):
        return {"model_context": {"fn": "yes"}}

    def plain(state):
        return None

    hooks = normalise_hooks({"before_llm": [AsyncOnly(), async_fn, plain]})
    assert run_hooks(hooks["before_llm"], {"messages": []}, "before_llm") == {
        "model_context": {"async": "yes", "fn": "yes"}
    }

    # Also from inside a running event loop (an async embedding calling sync code).
    async def inside_loop():
        return run_hooks(hooks["before_llm"], {"messages": []}, "before_llm")

    assert asyncio.run(inside_loop())["model_context"]["async"] == "yes"


def test_hooks_load_by_import_path_and_from_the_config_file(tmp_path: Path) -> None:
    assert isinstance(load_hook("gatehouse.graph.agent.builtin_hooks:SystemContext"), object)
    budget = load_hook(
        {"path": "gatehouse.graph.agent.builtin_hooks:Budget", "args": {"max_tokens": 5}}
    )
    assert budget.limits["run"]["tokens"] == 5
    with pytest.raises(ValueError, match="package.module:name"):
        load_hook("no_colon")
    with pytest.raises(ValueError, match="unknown hook point"):
        normalise_hooks({"after_everything": []})

    config = tmp_path / "gatehouse.toml"
    config.write_text(
        "[hooks]\n"
        'before_llm = ["gatehouse.graph.agent.builtin_hooks:SystemContext"]\n'
        "[[hooks.on_exit]]\n"
        'path = "gatehouse.graph.agent.builtin_hooks:RequireTool"\n'
        'args = { tool = "run_tests", max_reminders = 1 }\n'
    )
    hooks = HookSet(load_settings(config, env={}).hooks)
    assert type(hooks["before_llm"][0]).__name__ == "SystemContext"
    assert hooks["on_exit"][0].tool == "run_tests" and hooks["on_exit"][0].max_reminders == 1


# -- through the graph ----------------------------------------------------------


def test_each_point_runs_where_the_issue_says(tmp_path: Path) -> None:
    shared = Counter()  # one hook at all three points
    session, _ = make(
        tmp_path,
        [ai("", tool_call("lookup", {"key": "k"}, "c1")), "done"],
        {"before_llm": [shared], "before_tool": [shared], "on_exit": [shared]},
    )
    assert session.send("t", "go").collect()[-1].status == "completed"
    assert shared.seen == ["before_llm", "before_tool", "before_llm", "on_exit"]


def test_before_llm_stop_run_ends_the_run_with_the_reason(tmp_path: Path) -> None:
    @hook
    def gate(state):
        return {"stop_reason": "Quota exhausted for today."}

    session, model = make(tmp_path, ["never said"], {"before_llm": [gate]})
    events = session.send("t", "hello").collect()
    assert events[-1].status == "stopped" and events[-1].reason == "Quota exhausted for today."
    assert any(e.type == "notice" and "Quota" in e.text for e in events)
    assert model.inputs == []  # the model was never called
    assert "Quota exhausted" in session.view("t").messages[-1].content


def test_before_tool_stop_run_answers_every_call_without_running_it(tmp_path: Path) -> None:
    @hook
    def no_tools(state):
        return {"stop_reason": "Tools are disabled."}

    session, _ = make(
        tmp_path,
        [
            ai(
                "",
                tool_call("lookup", {"key": "k"}, "c1"),
                tool_call("deploy", {"service": "web"}, "c2"),
            )
        ],
        {"before_tool": [no_tools]},
    )
    events = session.send("t", "go").collect()
    assert events[-1].status == "stopped"
    assert CALLS == [] and session.view("t").pending is None
    answers = [m for m in session.view("t").messages if isinstance(m, ToolMessage)]
    assert {m.tool_call_id for m in answers} == {"c1", "c2"}


def test_on_exit_continue_run_keeps_the_agent_going(tmp_path: Path) -> None:
    @hook
    def once_more(state):
        if len([m for m in state["messages"] if isinstance(m, AIMessage)]) < 2:
            return {"continue_run": True, "messages": [HumanMessage("Double-check that.")]}
        return None

    session, model = make(tmp_path, ["first try", "checked: fine"], {"on_exit": [once_more]})
    assert session.send("t", "question").collect()[-1].status == "completed"
    assert [m.content for m in session.view("t").messages] == [
        "question",
        "first try",
        "Double-check that.",
        "checked: fine",
    ]
    assert len(model.inputs) == 2
    assert not (
        session.agent.get_state({"configurable": {"thread_id": "t"}}).values.get("continue_run")
    )


def test_hooks_may_rewrite_history_and_the_control_keys_still_decide(tmp_path: Path) -> None:
    @hook
    def rewrite(state):
        kept = [
            m
            for m in state["messages"]
            if not (isinstance(m, HumanMessage) and "secret" in m.content)
        ]
        return {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("[redacted]"), *kept]
        }

    session, model = make(tmp_path, ["ok"], {"before_llm": [rewrite]})
    session.send("t", "my secret is 42").collect()
    contents = [m.content for m in session.view("t").messages]
    assert contents == ["[redacted]", "ok"]
    assert all("secret" not in str(m.content) for m in model.inputs[0])


def test_model_context_reaches_the_model_but_never_the_history(tmp_path: Path) -> None:
    n = {"i": 0}

    @hook
    def stamp(state):
        n["i"] += 1
        return {"model_context": {"stamp": f"STAMP-{n['i']}"}}

    session, model = make(
        tmp_path, [ai("", tool_call("lookup", {"key": "k"}, "c1")), "done"], {"before_llm": [stamp]}
    )
    session.send("t", "go").collect()
    systems = [m.content for call in model.inputs for m in call if isinstance(m, SystemMessage)]
    assert [s.count("STAMP") for s in systems] == [1, 1]  # replaced, not piled up
    assert "STAMP-2" in systems[1]
    assert all("STAMP" not in str(m.content) for m in session.view("t").messages)


# -- pause and resume -----------------------------------------------------------


def test_before_tool_hooks_are_not_applied_twice_after_pause_and_resume(tmp_path: Path) -> None:
    counting = Counter()
    llm_counting = Counter()
    session, _ = make(
        tmp_path,
        [
            ai(
                "",
                tool_call("lookup", {"key": "a"}, "c1"),
                tool_call("deploy", {"service": "web"}, "c2"),
            ),
            "deployed",
        ],
        {"before_tool": [counting], "before_llm": [llm_counting]},
    )
    assert session.send("t", "ship it").collect()[-1].status == "awaiting_approval"
    assert counting.seen == ["before_tool"] and len(llm_counting.seen) == 1
    assert (
        session.resume("t", {"decisions": [{"type": "approve"}]}).collect()[-1].status
        == "completed"
    )
    assert counting.seen == ["before_tool"], "the review resumed; before_tool did not run again"
    assert len(llm_counting.seen) == 2  # only the new model call after the tools
    assert CALLS == ["lookup:a", "deploy:web"]


# -- errors ----------------------------------------------------------------------


class Flaky:
    def __init__(self) -> None:
        self.broken = True

    def run(self, state):
        if self.broken:
            raise RuntimeError("backend down")
        return {"model_context": {"flaky": "fixed"}}


@pytest.mark.parametrize("point", ["before_llm", "before_tool", "on_exit"])
def test_a_hook_that_raises_fails_the_run_and_retry_continues_once_fixed(
    tmp_path: Path, point: str
) -> None:
    flaky = Flaky()
    session, _ = make(
        tmp_path, [ai("", tool_call("lookup", {"key": "a"}, "c1")), "all good"], {point: [flaky]}
    )
    events = session.send("t", "go").collect()
    errors = [e for e in events if e.type == "error"]
    assert len(errors) == 1 and errors[0].kind == "hook" and errors[0].retryable
    assert "backend down" in errors[0].message and point in errors[0].message
    assert events[-1].status == "failed"
    before = [m.content for m in session.view("t").messages]
    config = {"configurable": {"thread_id": "t"}}
    assert session.agent.get_state(config).next  # stopped at the failing node, resumable

    flaky.broken = False
    assert session.retry("t").collect()[-1].status == "completed"
    after = [m.content for m in session.view("t").messages]
    assert after[: len(before)] == before and after[-1] == "all good"
    assert CALLS == ["lookup:a"], "nothing ran twice"


@pytest.mark.parametrize(
    "bad, message",
    [
        (["not", "a", "dict"], "not a state update"),
        ({"sneaky_key": 1}, "unknown state keys"),
        ({"messages": ["text"]}, "list of messages"),
        (
            {
                "messages": [
                    RemoveMessage(id=REMOVE_ALL_MESSAGES),
                    AIMessage("x", tool_calls=[tool_call("lookup", {"key": "z"}, "zz")]),
                    HumanMessage("y"),
                ]
            },
            "without results",
        ),
        (
            {
                "messages": [
                    RemoveMessage(id=REMOVE_ALL_MESSAGES),
                    ToolMessage("orphan", tool_call_id="nope"),
                ]
            },
            "without its tool call",
        ),
    ],
)
def test_a_broken_update_is_refused_and_never_reaches_the_state(
    tmp_path: Path, bad: Any, message: str
) -> None:
    broken = hook(lambda state: bad)
    session, _ = make(tmp_path, ["fine"], {"on_exit": [broken]})
    events = session.send("t", "hi").collect()
    error = next(e for e in events if e.type == "error")
    assert error.kind == "hook" and message in error.message
    assert [m.content for m in session.view("t").messages] == ["hi", "fine"]


# -- lifecycle --------------------------------------------------------------------


class WithLifecycle:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.client: object | None = None

    def warm_up(self) -> None:
        self.log.append("warm_up")
        self.client = object()  # opened lazily, in the process that runs the graph

    def close(self) -> None:
        self.log.append("close")

    def run(self, state):
        assert self.client is not None
        self.log.append("run")


class AsyncLifecycle:
    def __init__(self) -> None:
        self.log: list[str] = []

    async def awarm_up(self) -> None:
        self.log.append("awarm_up")

    async def aclose(self) -> None:
        self.log.append("aclose")

    async def arun(self, state):
        self.log.append("arun")


def test_warm_up_once_before_the_first_hook_and_close_once_with_the_session(tmp_path: Path) -> None:
    sync_hook, async_hook = WithLifecycle(), AsyncLifecycle()
    session, _ = make(
        tmp_path, ["a", "b"], {"before_llm": [sync_hook, async_hook], "on_exit": [sync_hook]}
    )
    assert sync_hook.log == []  # nothing opened at build time
    session.send("t", "one").collect()
    session.send("t", "two").collect()
    session.close()
    session.close()
    assert sync_hook.log == ["warm_up", "run", "run", "run", "run", "close"]
    assert async_hook.log == ["awarm_up", "arun", "arun", "aclose"]


def test_async_lifecycle_forms() -> None:
    sync_hook, async_hook = WithLifecycle(), AsyncLifecycle()
    hooks = HookSet({"before_llm": [sync_hook, async_hook]})

    async def lifecycle():
        await hooks.awarm_up()
        await hooks.awarm_up()
        await hooks.aclose()

    asyncio.run(lifecycle())
    assert sync_hook.log == ["warm_up", "close"]
    assert async_hook.log == ["awarm_up", "aclose"]


def test_a_failing_warm_up_is_a_hook_error(tmp_path: Path) -> None:
    class BadWarmUp:
        def warm_up(self):
            raise ConnectionError("no server")

        def run(self, state):
            return None

    session, _ = make(tmp_path, ["a"], {"before_llm": [BadWarmUp()]})
    events = session.send("t", "hi").collect()
    error = next(e for e in events if e.type == "error")
    assert error.kind == "hook" and "no server" in error.message
    with pytest.raises(HookError):
        HookSet({"before_llm": [BadWarmUp()]}).warm_up()


def test_build_graph_accepts_a_hook_set() -> None:
    hooks = HookSet({"before_llm": [Counter()]})
    graph = build_graph(
        model=ScriptedModel(script=["x"]), tools=[], checkpointer=False, hooks=hooks
    )
    assert graph.gatehouse_hooks is hooks


def test_an_async_hook_in_the_graph_can_emit_events(tmp_path: Path) -> None:
    from gatehouse.graph.agent.emit import emit
    from gatehouse.graph.protocol import events as ev

    @hook
    async def announce(state):
        emit(ev.Notice, text="hello from an async hook", source="announce")
        return {"model_context": {"note": "async"}}

    session, model = make(tmp_path, ["ok"], {"before_llm": [announce]})
    events = session.send("t", "hi").collect()
    assert [e.text for e in events if e.type == "notice"] == ["hello from an async hook"]
    assert "async" in model.inputs[0][0].content
