"""Issue 35 items 1, 6 and 8: a Haystack-style hook with sync and async forms runs the
async ones under AsyncSession (one loop) and the sync ones under Session; the nested
`flow_control` spelling; an on_exit message without continue_run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from gatehouse.graph import AsyncSession, ScriptedModel, Session, build_graph, hook, open_session
from gatehouse.graph.agent.hooks import HookError, HookSet
from gatehouse.graph.service.config import load_settings
from gatehouse.graph.store import open_storage
from tests.support import haystack_hooks

CONFIG = """
db = "gatehouse.db"
workspace = "ws"
[hooks]
before_llm = ["tests.support.haystack_hooks:BothForms"]
"""


def settings(tmp_path: Path) -> Any:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "gatehouse.toml").write_text(CONFIG)
    return load_settings(tmp_path / "gatehouse.toml", env={})


def names() -> list[str]:
    return [name for name, _, _ in haystack_hooks.CALLS]


def test_under_async_session_the_async_forms_run_on_the_callers_loop(tmp_path: Path) -> None:
    haystack_hooks.CALLS.clear()
    model = ScriptedModel(fallback="ok")

    async def main() -> tuple[list[str], int]:
        session = AsyncSession(open_session(settings(tmp_path), model=model))
        await session.warm_up()  # as docs/hooks.md says
        for text in ("one", "two"):
            run = await session.start("t", text)
            events = await run.collect()
            assert events[-1].status == "completed", events[-1]
        await session.close()
        return names(), id(asyncio.get_running_loop())

    called, loop = asyncio.run(main())
    assert called == ["warm_up_async", "run_async", "run_async", "close_async"]
    # One loop: the caller's, for every async form (run_async used the client warm_up_async opened).
    assert {loop_id for _, loop_id, _ in haystack_hooks.CALLS} == {loop}
    assert all("async run" in m[0].content for m in model.inputs)


def test_under_session_the_sync_forms_run(tmp_path: Path) -> None:
    haystack_hooks.CALLS.clear()
    model = ScriptedModel(fallback="ok")
    session = open_session(settings(tmp_path), model=model)
    session.agent.gatehouse_hooks.warm_up()
    assert session.send("t", "one").collect()[-1].status == "completed"
    session.close()
    assert names() == ["warm_up", "run", "close"]
    assert all(loop_id is None for _, loop_id, _ in haystack_hooks.CALLS)  # no event loop involved
    assert "sync run" in model.inputs[0][0].content


def test_a_run_under_async_session_warms_up_with_the_async_form_too(tmp_path: Path) -> None:
    """Without an explicit warm_up: the first hook warms the set up, with the same form."""
    haystack_hooks.CALLS.clear()

    async def main() -> None:
        session = AsyncSession(open_session(settings(tmp_path), model=ScriptedModel(fallback="ok")))
        run = await session.start(None, "hi")
        assert (await run.collect())[-1].status == "completed"
        await session.close()

    asyncio.run(main())
    assert names() == ["warm_up_async", "run_async", "close_async"]


# -- flow_control, Haystack's nested spelling ---------------------------------------------


def make(tmp_path: Path, script: list[Any], hooks: dict[str, Any]) -> tuple[Session, ScriptedModel]:
    model = ScriptedModel(script=script)
    storage = open_storage(str(tmp_path / "db"))
    graph = build_graph(model=model, tools=[], checkpointer=storage.checkpointer, hooks=hooks)
    return Session(graph, storage, []), model


def test_nested_flow_control_continues_the_run(tmp_path: Path) -> None:
    rounds: list[int] = []

    @hook
    def once_more(state):
        if rounds:
            return None
        rounds.append(1)
        return {
            "messages": [HumanMessage("Say it again, shorter.")],
            "flow_control": {"continue_run": True},
        }

    session, model = make(tmp_path, ["long answer", "short"], {"on_exit": [once_more]})
    events = session.send("t", "hi").collect()
    assert events[-1].status == "completed" and events[-1].text == "short"
    assert len(model.inputs) == 2


def test_nested_flow_control_set_in_place_stops_the_run(tmp_path: Path) -> None:
    @hook
    def stop_in_place(state):
        state["flow_control"] = {"stop_reason": "Stopped by policy hook."}

    session, model = make(tmp_path, ["never"], {"before_llm": [stop_in_place]})
    events = session.send("t", "hi").collect()
    assert events[-1].status == "stopped" and events[-1].reason == "Stopped by policy hook."
    assert model.inputs == []


@pytest.mark.parametrize(
    "update, error",
    [
        ({"flow_control": {"continue_runn": True}}, "unknown flow_control keys"),
        ({"flow_control": True}, "'flow_control' must be a dict"),
        ({"flow_control": {"stop_reason": "a"}, "stop_reason": "b"}, "twice with different values"),
    ],
)
def test_bad_flow_control_is_a_hook_error(update: dict[str, Any], error: str) -> None:
    hooks = HookSet({"on_exit": [hook(lambda state: update)]})
    with pytest.raises(HookError, match=error):
        hooks.run("on_exit", {"messages": [HumanMessage("q", id="h"), AIMessage("a", id="a")]})


def test_flat_and_nested_keys_that_agree_are_accepted() -> None:
    hooks = HookSet(
        {
            "on_exit": [
                hook(lambda state: {"continue_run": True, "flow_control": {"continue_run": True}})
            ]
        }
    )
    assert hooks.run("on_exit", {"messages": []}) == {"continue_run": True}


# -- on_exit: a message without continue_run ----------------------------------------------


def test_on_exit_message_without_continue_run_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    @hook
    def nag(state):
        return {"messages": [HumanMessage("Also add tests.")]}  # forgot continue_run

    session, model = make(tmp_path, ["done"], {"on_exit": [nag]})
    events = session.send("t", "hi").collect()
    error = next(e for e in events if e.type == "error")
    assert events[-1].status == "failed" and error.kind == "hook"
    assert "continue_run" in error.message and "user message" in error.message
    # The failing step wrote nothing: no dangling message in the history.
    assert [m.content for m in session.view("t").messages] == ["hi", "done"]


def test_on_exit_may_add_a_closing_assistant_message_without_continue_run(tmp_path: Path) -> None:
    @hook
    def sign(state):
        if not state["messages"][-1].content.endswith("(checked)"):
            return {"messages": [AIMessage("All checks passed (checked)")]}

    session, _ = make(tmp_path, ["done"], {"on_exit": [sign]})
    assert session.send("t", "hi").collect()[-1].status == "completed"
    assert session.view("t").messages[-1].content == "All checks passed (checked)"


def test_on_exit_may_edit_earlier_messages_in_place_without_continue_run(tmp_path: Path) -> None:
    @hook
    def scrub(state):
        first = state["messages"][0]
        if "password" in first.content:
            first.content = first.content.replace(
                "hunter2", "[redacted]"
            )  # the person's own message

    session, _ = make(tmp_path, ["noted"], {"on_exit": [scrub]})
    assert session.send("t", "my password is hunter2").collect()[-1].status == "completed"
    assert [m.content for m in session.view("t").messages] == ["my password is [redacted]", "noted"]
