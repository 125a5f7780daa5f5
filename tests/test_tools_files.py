"""Workspace file tools: what they return, what they change, what a person sees on the
approval card before a change, and how the policy treats them."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import gatehouse.tools.files as files_module
from gatehouse.graph import Policy, ScriptedModel, ai, build_graph, tool_call
from gatehouse.graph.protocol.tools import spec_of
from gatehouse.graph.service.config import Settings
from gatehouse.graph.service.demo_model import DemoModel
from gatehouse.graph.service.toolset import build_tools
from gatehouse.tools.files import EditError, make_file_tools, size_text
from gatehouse.tools.workspace import PathError, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


@pytest.fixture
def tools(ws: Workspace) -> dict[str, BaseTool]:
    return {t.name: t for t in make_file_tools(ws)}


def put(ws: Workspace, path: str, text: str) -> Path:
    target = ws.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def run(graph: Any, payload: Any, config: dict) -> list[dict]:
    """Stream a run; return the custom (Gatehouse) events."""
    custom = []
    for mode, chunk in graph.stream(payload, config, stream_mode=["updates", "custom"]):
        if mode == "custom":
            custom.append(chunk)
    return custom


def new_config() -> dict:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def last_tool_message(graph: Any, config: dict) -> ToolMessage:
    return [m for m in graph.get_state(config).values["messages"] if isinstance(m, ToolMessage)][-1]


# -- list / read / search ------------------------------------------------------


def test_list_shows_sizes_and_recursive_listing_skips_tool_caches(
    ws: Workspace, tools: dict
) -> None:
    put(ws, "notes.md", "hello")
    put(ws, "src/app.py", "print(1)\n")
    put(ws, ".git/HEAD", "ref: main\n")
    flat = tools["list_files"].invoke({"path": "."}).splitlines()
    assert flat == [".git/", "notes.md  5 B", "src/"]
    deep = tools["list_files"].invoke({"path": ".", "recursive": True}).splitlines()
    assert deep == [".git/", "notes.md  5 B", "src/", "src/app.py  9 B"]
    assert tools["list_files"].invoke({"path": "src"}) == "src/app.py  9 B"


def test_read_line_range_and_size_cap(
    ws: Workspace, tools: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(ws, "poem.txt", "".join(f"line {i}\n" for i in range(1, 21)))
    out = tools["read_file"].invoke({"path": "poem.txt", "start_line": 3, "end_line": 5})
    assert out == "line 3\nline 4\nline 5\n\n… (lines 3-5 of 20 in poem.txt)"
    assert (
        tools["read_file"]
        .invoke({"path": "poem.txt", "start_line": 19})
        .startswith("line 19\nline 20\n")
    )
    assert "only 20 line(s)" in tools["read_file"].invoke({"path": "poem.txt", "start_line": 30})
    with pytest.raises(ValueError, match="before start_line"):
        tools["read_file"].invoke({"path": "poem.txt", "start_line": 5, "end_line": 2})

    monkeypatch.setattr(files_module, "READ_CAP_BYTES", 30)
    capped = tools["read_file"].invoke({"path": "poem.txt"})
    assert capped.startswith("line 1\nline 2\nline 3\nline 4\n")
    assert "line 5" not in capped and "use start_line=5 to read on" in capped
    ranged = tools["read_file"].invoke({"path": "poem.txt", "start_line": 10, "end_line": 20})
    assert ranged == (
        "line 10\nline 11\nline 12\n\n… (lines 10-12 of 20 in poem.txt); "
        "size cap reached, use start_line=13 to read on"
    )


def test_read_reports_binary_files_instead_of_dumping_them(ws: Workspace, tools: dict) -> None:
    (ws.root / "logo.png").write_bytes(b"\x89PNG\x00\x00" + bytes(range(256)))
    assert (
        tools["read_file"].invoke({"path": "logo.png"})
        == "logo.png is a binary file (262 B); not shown."
    )


def test_search_text_and_regex_with_line_numbers(ws: Workspace, tools: dict) -> None:
    put(ws, "a.md", "intro\nTODO: write tests\n")
    put(ws, "src/b.py", "x = 1  # todo later\ny = 2\n")
    put(ws, ".git/config", "TODO in a cache\n")
    (ws.root / "blob.bin").write_bytes(b"TODO\x00\x01")
    search = tools["search_files"]
    assert search.invoke({"pattern": "TODO"}) == "a.md:2: TODO: write tests"
    assert search.invoke({"pattern": "todo", "ignore_case": True}).splitlines() == [
        "a.md:2: TODO: write tests",
        "src/b.py:1: x = 1  # todo later",
    ]
    assert search.invoke(
        {"pattern": r"^[xy] = \d", "regex": True, "glob": "*.py"}
    ).splitlines() == [
        "src/b.py:1: x = 1  # todo later",
        "src/b.py:2: y = 2",
    ]
    assert (
        search.invoke({"pattern": "nothing here"}) == "no matches for 'nothing here' in 2 file(s)"
    )
    with pytest.raises(ValueError, match="bad regex"):
        search.invoke({"pattern": "([", "regex": True})


# -- write / edit / delete / move -------------------------------------------------


def test_write_creates_folders_and_keeps_the_mode_of_a_file_it_replaces(
    ws: Workspace, tools: dict
) -> None:
    assert tools["write_file"].invoke({"path": "deep/new/file.txt", "content": "hi"}) == (
        "wrote 2 bytes to deep/new/file.txt (created)"
    )
    script = put(ws, "run.sh", "echo old\n")
    script.chmod(0o755)
    assert "(overwrote)" in tools["write_file"].invoke({"path": "run.sh", "content": "echo new\n"})
    assert script.read_text() == "echo new\n" and os.access(script, os.X_OK)
    assert [p.name for p in ws.root.iterdir() if "gatehouse" in p.name] == []  # no temp files left


def test_edit_replaces_exact_unique_text(ws: Workspace, tools: dict) -> None:
    notes = put(ws, "notes.md", "milk\nbread\neggs\n")
    out = tools["edit_file"].invoke(
        {"path": "notes.md", "old_text": "bread", "new_text": "rye bread"}
    )
    assert out == "edited notes.md: replaced 1 occurrence(s), first at line 2"
    assert notes.read_text() == "milk\nrye bread\neggs\n"


def test_edit_fails_clearly_when_text_is_missing_or_not_unique(ws: Workspace, tools: dict) -> None:
    notes = put(ws, "notes.md", "a = 1\nb = 1\nc = 2\n")
    with pytest.raises(EditError, match="not found in notes.md"):
        tools["edit_file"].invoke({"path": "notes.md", "old_text": "d = 4", "new_text": "x"})
    with pytest.raises(EditError, match=r"appears 2 times in notes.md \(lines 1, 2\)"):
        tools["edit_file"].invoke({"path": "notes.md", "old_text": " = 1", "new_text": " = 9"})
    assert notes.read_text() == "a = 1\nb = 1\nc = 2\n"
    tools["edit_file"].invoke(
        {"path": "notes.md", "old_text": " = 1", "new_text": " = 9", "replace_all": True}
    )
    assert notes.read_text() == "a = 9\nb = 9\nc = 2\n"


def test_delete_file_folder_and_symlink(ws: Workspace, tools: dict) -> None:
    put(ws, "old.txt", "x" * 10)
    put(ws, "build/a.o", "1")
    put(ws, "build/sub/b.o", "22")
    (ws.root / "empty").mkdir()
    put(ws, "keep.txt", "kept")
    (ws.root / "link").symlink_to("keep.txt")
    delete = tools["delete_file"]
    assert delete.invoke({"path": "old.txt"}) == "deleted old.txt (10 B)"
    with pytest.raises(PathError, match="not empty"):
        delete.invoke({"path": "build"})
    assert (ws.root / "build" / "sub" / "b.o").exists()
    assert "2 file(s)" in delete.invoke({"path": "build", "recursive": True})
    delete.invoke({"path": "empty"})
    delete.invoke({"path": "link"})
    assert sorted(p.name for p in ws.root.iterdir()) == ["keep.txt"]  # the link's target stays
    with pytest.raises(PathError, match="root"):
        delete.invoke({"path": ".", "recursive": True})


def test_delete_file_removes_a_link_that_points_outside_and_keeps_its_target(
    ws: Workspace, tools: dict, tmp_path: Path
) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("keep me")
    (ws.root / "sub").mkdir()
    (ws.root / "sub" / "door").symlink_to(secret)
    (ws.root / "to-etc").symlink_to("/etc")
    preview = spec_of(tools["delete_file"]).preview
    assert preview is not None
    assert (
        preview({"path": "sub/door"}) == f"delete symlink sub/door -> {secret} (its target is kept)"
    )
    assert (
        tools["delete_file"].invoke({"path": "sub/door"})
        == "deleted sub/door (" + size_text(len(str(secret))) + ")"
    )
    assert tools["delete_file"].invoke({"path": "to-etc"}).startswith("deleted to-etc")
    assert not (ws.root / "sub" / "door").is_symlink() and not (ws.root / "to-etc").is_symlink()
    assert secret.read_text() == "keep me" and Path("/etc/passwd").exists()
    # Through a link that leads out, nothing is reached: not the link's target's contents.
    (ws.root / "door2").symlink_to(tmp_path)
    with pytest.raises(PathError, match="symlink that leads outside"):
        tools["delete_file"].invoke({"path": "door2/outside.txt"})
    assert secret.exists()


def test_move_renames_moves_into_folders_and_never_overwrites_silently(
    ws: Workspace, tools: dict
) -> None:
    put(ws, "a.txt", "A")
    put(ws, "b.txt", "B")
    (ws.root / "archive").mkdir()
    move = tools["move_file"]
    assert (
        move.invoke({"source": "a.txt", "destination": "archive"}) == "moved a.txt -> archive/a.txt"
    )
    with pytest.raises(PathError, match="already exists"):
        move.invoke({"source": "b.txt", "destination": "archive/a.txt"})
    assert (ws.root / "archive" / "a.txt").read_text() == "A"
    move.invoke({"source": "b.txt", "destination": "archive/a.txt", "overwrite": True})
    assert (ws.root / "archive" / "a.txt").read_text() == "B" and not (ws.root / "b.txt").exists()
    move.invoke({"source": "archive", "destination": "old/2024"})
    assert (ws.root / "old" / "2024" / "a.txt").exists()
    with pytest.raises(PathError, match="into itself"):
        move.invoke({"source": "old", "destination": "old/2024/inner"})


# -- previews on the approval card ------------------------------------------------


def preview(tool: BaseTool, args: dict) -> str:
    spec = spec_of(tool)
    assert spec.preview is not None
    return spec.preview(args) or ""


def test_previews_show_what_will_change(ws: Workspace, tools: dict) -> None:
    put(ws, "notes.md", "milk\nbread\n")
    put(ws, "big/a.txt", "x" * 2048)
    edit = preview(
        tools["edit_file"], {"path": "notes.md", "old_text": "milk", "new_text": "oat milk"}
    )
    assert edit.startswith("--- a/notes.md\n+++ b/notes.md\n") and "-milk\n+oat milk\n" in edit
    overwrite = preview(tools["write_file"], {"path": "notes.md", "content": "milk\n"})
    assert "-bread\n" in overwrite
    new = preview(
        tools["write_file"],
        {"path": "todo.md", "content": "".join(f"item {i}\n" for i in range(100))},
    )
    # The whole file: the card, not the preview, decides what is shown (and says the rest).
    assert new.startswith("new file todo.md (") and "item 99" in new and "more lines" not in new
    assert preview(tools["delete_file"], {"path": "notes.md"}).startswith(
        "delete file notes.md (11 B)"
    )
    assert "1 file(s) and 0 subfolder(s), 2.0 KB" in preview(
        tools["delete_file"], {"path": "big", "recursive": True}
    )
    assert (
        preview(tools["move_file"], {"source": "notes.md", "destination": "n.md"})
        == "move notes.md -> n.md"
    )
    missing = preview(
        tools["edit_file"], {"path": "notes.md", "old_text": "cheese", "new_text": "x"}
    )
    assert missing.startswith("will fail: old_text was not found")
    assert preview(tools["write_file"], {"path": "../x", "content": ""}).startswith("refused:")


# -- policy, schemas, the graph ----------------------------------------------------


def test_read_only_tools_allow_and_changing_tools_ask(tools: dict) -> None:
    policy = Policy.from_mapping({})
    modes = {
        name: policy.evaluate(name, {"path": "x"}, tool, []).mode for name, tool in tools.items()
    }
    assert modes == {
        "list_files": "allow",
        "read_file": "allow",
        "search_files": "allow",
        "write_file": "ask",
        "edit_file": "ask",
        "delete_file": "ask",
        "move_file": "ask",
    }


def test_every_default_tool_has_a_docstring_a_typed_schema_and_a_risk(tmp_path: Path) -> None:
    built = build_tools(
        Settings(workspace=str(tmp_path / "ws"), sql_database=str(tmp_path / "app.db"))
    )
    names = [t.name for t in built]
    assert names == [
        "list_files", "read_file", "search_files", "write_file", "edit_file", "delete_file",
        "move_file", "run_command", "http_request", "sql_query",
    ]  # fmt: skip
    for t in built:
        assert len(t.description) > 40, t.name
        schema = t.tool_call_schema.model_json_schema()
        assert schema["properties"] and all(
            "type" in p or "anyOf" in p for p in schema["properties"].values()
        ), t.name
        assert spec_of(t).risk in {"read", "write", "delete", "execute", "network"}
    assert "sql_query" not in [
        t.name for t in build_tools(Settings(workspace=str(tmp_path / "ws")))
    ]


def test_gated_edit_pauses_with_a_diff_and_changes_the_file_only_after_approval(
    ws: Workspace, tools: dict
) -> None:
    notes = put(ws, "notes.md", "milk\nbread\n")
    model = ScriptedModel(
        script=[
            ai(
                "",
                tool_call("list_files", {}, "c0"),
                tool_call(
                    "edit_file",
                    {"path": "notes.md", "old_text": "milk", "new_text": "oat milk"},
                    "c1",
                ),
            ),
            "done",
        ]
    )
    graph = build_graph(model=model, tools=list(tools.values()), checkpointer=InMemorySaver())
    config = new_config()
    events = run(graph, {"messages": [("user", "swap the milk")]}, config)

    (pending,) = graph.get_state(config).interrupts
    (action,) = pending.value["action_requests"]
    assert action["name"] == "edit_file" and action["risk"] == "write"
    assert "-milk\n+oat milk\n" in action["preview"]
    assert notes.read_text() == "milk\nbread\n"
    # The free call beside it already ran.
    assert any(e.type == "tool_finished" and e.call_id == "c0" for e in events)

    run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert notes.read_text() == "oat milk\nbread\n"
    assert last_tool_message(graph, config).content.startswith("edited notes.md")


def test_demo_model_uses_the_file_tools(ws: Workspace, tools: dict) -> None:
    put(ws, "notes.md", "TODO: milk\n")
    graph = build_graph(model=DemoModel(), tools=list(tools.values()), checkpointer=InMemorySaver())
    config = new_config()
    run(graph, {"messages": [("user", "search TODO then list all files")]}, config)
    assert not graph.get_state(config).interrupts
    reply = graph.get_state(config).values["messages"][-1].content
    assert "notes.md:1: TODO: milk" in reply and "notes.md  11 B" in reply

    run(graph, {"messages": [("user", "edit notes.md: milk -> oat milk")]}, config)
    (pending,) = graph.get_state(config).interrupts
    assert "+TODO: oat milk" in pending.value["action_requests"][0]["preview"]
    run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)

    run(graph, {"messages": [("user", "move notes.md to archive/notes.md")]}, config)
    run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert (ws.root / "archive" / "notes.md").read_text() == "TODO: oat milk\n"

    run(graph, {"messages": [("user", "delete archive/notes.md")]}, config)
    (pending,) = graph.get_state(config).interrupts
    assert pending.value["action_requests"][0]["preview"].startswith(
        "delete file archive/notes.md (15 B)"
    )
