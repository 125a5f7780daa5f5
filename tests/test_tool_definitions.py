"""Issue 36: what the model is shown of the tools is made once, not at every open.

Each tool's OpenAI-format definition is kept for the process and on disk (tools/
definitions.py), and the model is given the definitions. What a real client sends
must not change: `ChatOpenAI` bound to the definitions sends exactly the `tools` it
sends when bound to the tools themselves. A definition on disk is used only for the
same name, description and fields under the same LangChain and pydantic; anything
else is made again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from gatehouse.graph import Settings, open_session
from gatehouse.graph.agent.offload import OffloadOptions, make_read_tool
from gatehouse.graph.service.toolset import build_tools
from gatehouse.tools import definitions
from gatehouse.tools.base import gatehouse_tool


def default_tools(tmp_path: Path) -> list[BaseTool]:
    settings = Settings(
        db=str(tmp_path / "g.sqlite"),
        workspace=str(tmp_path / "ws"),
        sql_database=str(tmp_path / "data.sqlite"),
        shell_sandbox="off",
    )
    return [*build_tools(settings), make_read_tool(None, OffloadOptions())]  # type: ignore[arg-type]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder and an empty process cache: a new process on a new machine."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("GATEHOUSE_CACHE_DIR", str(folder))
    monkeypatch.setattr(definitions, "_kept", {})
    return folder


def made_count(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the tools whose definitions are made (not found) from now on."""
    made: list[str] = []
    real = definitions._make

    def counting(tool: BaseTool) -> dict[str, Any]:
        made.append(tool.name)
        return real(tool)

    monkeypatch.setattr(definitions, "_make", counting)
    return made


def openai_client() -> ChatOpenAI:
    return ChatOpenAI(model="m", api_key="sk-test", base_url="http://127.0.0.1:9/v1")  # type: ignore[arg-type]


@pytest.mark.parametrize("strict", [None, True])
def test_the_model_is_sent_exactly_what_langchain_would_send(
    tmp_path: Path, cache: Path, strict: bool | None
) -> None:
    tools = default_tools(tmp_path)
    shown = definitions.tool_definitions(tools)
    assert [{"type": "function", "function": d} for d in shown] == [
        convert_to_openai_tool(t) for t in tools
    ]
    client = openai_client()
    sent = client.bind_tools(shown, strict=strict).kwargs["tools"]  # type: ignore[attr-defined]
    before = client.bind_tools(tools, strict=strict).kwargs["tools"]  # type: ignore[attr-defined]
    assert sent == before
    # And the same from the disk, in a "new process".
    definitions._kept.clear()
    assert definitions.tool_definitions(default_tools(tmp_path)) == shown


def test_a_new_process_reads_the_definitions_instead_of_making_them(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = made_count(monkeypatch)
    first = definitions.tool_definitions(default_tools(tmp_path))
    assert sorted(made) == sorted(d["name"] for d in first)
    assert (cache / definitions.FILE).exists()
    made.clear()
    # The same process, new tool objects (a second open): kept in memory.
    assert definitions.tool_definitions(default_tools(tmp_path)) == first
    assert made == []
    # A new process: read from the disk.
    definitions._kept.clear()
    assert definitions.tool_definitions(default_tools(tmp_path)) == first
    assert made == []


def test_a_second_open_with_a_real_client_makes_no_definition(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(db=str(tmp_path / "g.sqlite"), workspace=str(tmp_path / "ws"))
    made = made_count(monkeypatch)
    open_session(settings, model=openai_client()).close()
    assert "write_file" in made
    made.clear()
    session = open_session(settings, model=openai_client())
    try:
        assert made == []
        bound = session.agent.deps.model  # type: ignore[attr-defined]
        names = [t["function"]["name"] for t in bound.kwargs["tools"]]  # as sent
        assert "write_file" in names and "run_command" in names
    finally:
        session.close()


def note_tool(description: str, limit: int) -> BaseTool:
    def take_note(text: str, lines: int = 1) -> str:
        return text

    take_note.__doc__ = description
    take_note.__annotations__ = {
        "text": Annotated[str, Field(description="What to write down.")],
        "lines": Annotated[int, Field(ge=1, le=limit)],
        "return": str,
    }
    return gatehouse_tool(take_note, risk="write")  # type: ignore[no-any-return]


def test_a_changed_description_or_constraint_is_made_again_not_read_stale(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = made_count(monkeypatch)
    old = definitions.tool_definition(note_tool("Write a note.", 10))
    definitions._kept.clear()
    changed_text = definitions.tool_definition(note_tool("Write a short note.", 10))
    definitions._kept.clear()
    changed_limit = definitions.tool_definition(note_tool("Write a note.", 20))
    assert made == ["take_note"] * 3
    assert changed_text["description"] == "Write a short note."
    assert changed_limit["parameters"]["properties"]["lines"]["maximum"] == 20
    assert old["parameters"]["properties"]["lines"]["maximum"] == 10


class Where(BaseModel):
    city: str


def test_a_schema_of_models_is_kept_in_memory_only(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Args(BaseModel):
        where: Where

    weather = StructuredTool.from_function(
        func=lambda where: "sunny", name="weather", description="Weather.", args_schema=Args
    )
    assert definitions.disk_key(weather) is None  # `Where` would be only a name in the key
    shown = definitions.tool_definition(weather)
    assert {"type": "function", "function": shown} == convert_to_openai_tool(weather)
    assert not (cache / definitions.FILE).exists()


def test_a_damaged_or_foreign_cache_file_is_made_again(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = default_tools(tmp_path)
    expected = [convert_to_openai_tool(t)["function"] for t in tools]
    cache.mkdir()
    (cache / definitions.FILE).write_text("{not json")
    assert definitions.tool_definitions(tools) == expected
    # An entry under the right key that is not a definition of this tool is not used.
    entries = json.loads((cache / definitions.FILE).read_text())
    key = definitions.disk_key(tools[0])
    assert key in entries
    entries[key] = {"name": "something_else", "parameters": {}}
    (cache / definitions.FILE).write_text(json.dumps(entries))
    definitions._kept.clear()
    assert definitions.tool_definitions(tools) == expected


def test_with_the_cache_off_the_definitions_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEHOUSE_CACHE_DIR", "off")
    monkeypatch.setattr(definitions, "_kept", {})
    tools = default_tools(tmp_path)
    assert definitions.tool_definitions(tools) == [
        convert_to_openai_tool(t)["function"] for t in tools
    ]
