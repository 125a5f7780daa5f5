"""CachedTool (tools/base.py) behaves as LangChain's StructuredTool: the same
result, the same arguments reach the function (config, callbacks), the same inputs
reach the callbacks, the same errors; and a replaced function or schema is looked at
again."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolArg, StructuredTool
from pydantic import BaseModel, Field, ValidationError

from gatehouse.tools.base import CachedTool
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.workspace import Workspace


class Seen(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: list[tuple[str, Any]] = []
        self.ends: list[Any] = []

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.starts.append((input_str, kwargs.get("inputs")))

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.ends.append(output.content if isinstance(output, ToolMessage) else output)


def _both(func: Any, **kw: Any) -> tuple[StructuredTool, StructuredTool]:
    return StructuredTool.from_function(func, **kw), CachedTool.from_function(func, **kw)


def _run_both(tools: tuple[BaseModel, ...], call: dict[str, Any]) -> list[tuple[Any, Any]]:
    out = []
    for t in tools:
        seen = Seen()
        result = t.invoke(call, {"callbacks": [seen], "configurable": {"x": 1}})  # type: ignore[attr-defined]  # a tool
        content = result.content if isinstance(result, ToolMessage) else result
        out.append((content, (seen.starts, seen.ends)))
    return out


def test_file_tools_answer_as_structured_tools_do(tmp_path: Any) -> None:
    ws = Workspace(tmp_path)
    (tmp_path / "a.md").write_text("one\ntwo\n")
    cached = {t.name: t for t in make_file_tools(ws)}
    assert all(isinstance(t, CachedTool) for t in cached.values())
    for name, args in [
        ("read_file", {"path": "a.md"}),
        ("read_file", {"path": "a.md", "start_line": 2}),
        ("list_files", {"path": "."}),
        ("write_file", {"path": "b.md", "content": "new\n"}),
    ]:
        tool = cached[name]
        stock = StructuredTool(
            name=tool.name,
            description=tool.description,
            args_schema=tool.args_schema,  # type: ignore[arg-type]  # a model here, never None
            func=tool.func,  # type: ignore[attr-defined]  # a StructuredTool's field
        )
        call = {"name": name, "args": args, "id": "call-1", "type": "tool_call"}
        first, second = _run_both((stock, tool), call)
        if name == "write_file":  # the second write overwrites what the first created
            assert first[0].replace("created", "overwrote") == second[0]
            assert first[1][0] == second[1][0]
        else:
            assert first == second
    # Bad arguments are refused the same way.
    for tool in (cached["read_file"],):
        with pytest.raises(ValidationError):
            tool.invoke({"path": "a.md", "start_line": 0})


def test_config_and_callbacks_reach_the_function_and_injected_args_stay_hidden() -> None:
    got: list[tuple[Any, bool]] = []

    def f(
        text: str,
        secret: Annotated[str, InjectedToolArg],
        config: RunnableConfig,
        callbacks: Any = None,
    ) -> str:
        """Echo."""
        got.append(((config.get("configurable") or {}).get("x"), callbacks is not None))
        return f"{text}/{secret}"

    stock, cached = _both(f)
    call = {"name": "f", "args": {"text": "hi", "secret": "s"}, "id": "c", "type": "tool_call"}
    first, second = _run_both((stock, cached), call)
    assert first == second
    assert first[0] == "hi/s"
    # The callbacks were shown the arguments without the injected one.
    assert first[1][0][0][1] == {"text": "hi"}
    assert got == [(1, True), (1, True)]


def test_a_replaced_function_or_schema_is_looked_at_again() -> None:
    def plain(text: str) -> str:
        """Plain."""
        return text.upper()

    def with_config(text: str, config: RunnableConfig) -> str:
        """With config."""
        return f"{text}:{(config.get('configurable') or {}).get('x')}"

    tool = CachedTool.from_function(plain)
    assert tool.invoke({"text": "a"}, {"configurable": {"x": 7}}) == "A"
    tool.func = with_config
    assert tool.invoke({"text": "a"}, {"configurable": {"x": 7}}) == "a:7"

    class Hidden(BaseModel):
        text: str
        token: Annotated[str, InjectedToolArg] = Field(default="t")

    def hidden(text: str, token: str = "t") -> str:
        """Hidden."""
        return text + token

    seen = Seen()
    tool.args_schema = Hidden
    tool.func = hidden
    assert tool.invoke({"text": "b", "token": "s"}, {"callbacks": [seen]}) == "bs"
    assert seen.starts[0][1] == {"text": "b"}


def test_gatehouse_tool_builds_what_the_tool_decorator_builds() -> None:
    from langchain_core.tools import tool

    from gatehouse.tools.base import gatehouse_tool

    def shout(text: str, times: Annotated[int, Field(ge=1, description="How often")] = 1) -> str:
        """Say it louder."""
        return (text.upper() + " ") * times

    ours = gatehouse_tool(shout, risk="read")
    stock = tool("shout", args_schema=ours.args_schema)(shout)
    assert isinstance(ours, CachedTool)
    fields = ("name", "description", "return_direct", "response_format", "args_schema")
    assert {f: getattr(ours, f) for f in fields} == {f: getattr(stock, f) for f in fields}
    assert ours.args == stock.args  # what the model is shown
    call = {"name": "shout", "args": {"text": "hi", "times": 2}, "id": "c", "type": "tool_call"}
    first, second = _run_both((stock, ours), call)
    assert first == second
    assert first[0] == "HI HI "
