"""Issue 36: opening a session does no work it can defer or cache, and changes nothing.

Tool argument schemas are built once per process (and their validators on first use),
yet they are exactly the schemas LangChain infers: what the model is shown and what a
call's arguments are checked against. The bubblewrap probe's usable result is kept on
disk, keyed by what it depended on, so a new process does not run bwrap three times;
a changed binary is probed again and an unusable result is never kept.
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path

import pytest
from langchain_core.tools import tool as lc_tool
from langchain_core.tools.base import create_schema_from_function
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from gatehouse.graph import Settings
from gatehouse.graph.agent.offload import OffloadOptions, make_read_tool
from gatehouse.graph.service.toolset import build_tools
from gatehouse.tools import disk_cache
from gatehouse.tools.sandbox import detect_bubblewrap
from tests.test_sandbox import fake_bwrap


def langchain_schema(t: object) -> type:
    """The schema LangChain infers for the tool's function, as the tool did before."""
    func = t.func  # type: ignore[attr-defined]
    if hasattr(func, "func"):  # a bound tool: the first parameter is its context
        fn = func.func
        first = next(iter(inspect.signature(fn).parameters))
        return create_schema_from_function(
            fn.__name__, fn, filter_args=[first], parse_docstring=False
        )
    return lc_tool(t.name)(func).args_schema  # type: ignore[attr-defined]


def default_tools(tmp_path: Path, name: str = "ws") -> list[object]:
    settings = Settings(
        db=str(tmp_path / "g.sqlite"),
        workspace=str(tmp_path / name),
        sql_database=str(tmp_path / "data.sqlite"),
        shell_sandbox="off",
    )
    return [*build_tools(settings), make_read_tool(None, OffloadOptions())]  # type: ignore[arg-type]


def test_every_default_tool_shows_and_checks_the_schema_langchain_infers(tmp_path: Path) -> None:
    tools = default_tools(tmp_path)
    assert {t.name for t in tools} >= {
        "read_file",
        "write_file",
        "run_command",
        "http_request",
        "sql_query",  # type: ignore[attr-defined]
        "read_tool_output",
    }
    for t in tools:
        ref = langchain_schema(t)
        mine = t.args_schema  # type: ignore[attr-defined]
        assert mine.model_json_schema() == ref.model_json_schema(), t.name  # type: ignore[attr-defined]
        assert repr(mine.model_fields) == repr(ref.model_fields), t.name
        assert mine.__doc__ == ref.__doc__, t.name
        # What the model is shown (an OpenAI tool definition) is the same.
        shown = convert_to_openai_tool(t)  # type: ignore[arg-type]
        expected = convert_to_openai_tool(t.model_copy(update={"args_schema": ref}))  # type: ignore[attr-defined]
        assert shown == expected, t.name
    # And arguments are checked as before: a bad one is refused with the same error.
    read_file = next(t for t in tools if t.name == "read_file")  # type: ignore[attr-defined]
    bad = {"path": "a.txt", "start_line": 0}
    with pytest.raises(ValidationError) as mine_err:
        read_file.args_schema.model_validate(bad)  # type: ignore[attr-defined]
    with pytest.raises(ValidationError) as ref_err:
        langchain_schema(read_file).model_validate(bad)
    assert mine_err.value.errors() == ref_err.value.errors()


def test_a_second_open_reuses_the_schemas_and_each_tool_keeps_its_own_workspace(
    tmp_path: Path,
) -> None:
    first, second = default_tools(tmp_path, "one"), default_tools(tmp_path, "two")
    for a, b in zip(first, second, strict=True):
        assert a.args_schema is b.args_schema, a.name  # type: ignore[attr-defined]
    write_one = next(t for t in first if t.name == "write_file")  # type: ignore[attr-defined]
    write_two = next(t for t in second if t.name == "write_file")  # type: ignore[attr-defined]
    write_one.invoke({"path": "note.txt", "content": "one"})  # type: ignore[attr-defined]
    write_two.invoke({"path": "note.txt", "content": "two"})  # type: ignore[attr-defined]
    assert (tmp_path / "one" / "note.txt").read_text() == "one"
    assert (tmp_path / "two" / "note.txt").read_text() == "two"


def counting_bwrap(tmp_path: Path, trial: str) -> tuple[str, Path]:
    """A fake bwrap that logs each run, so a test can tell a probe from a cache hit."""
    runs = tmp_path / f"runs-{time.monotonic_ns()}"
    script = fake_bwrap(tmp_path, f"{trial}")
    text = Path(script).read_text().replace("#!/bin/sh\n", f"#!/bin/sh\necho run >> {runs}\n", 1)
    Path(script).write_text(text)
    return script, runs


def runs_of(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_usable_probe_is_kept_on_disk_and_a_changed_binary_is_probed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEHOUSE_CACHE_DIR", str(tmp_path / "cache"))
    working, runs = counting_bwrap(tmp_path, "exit 0")
    found = detect_bubblewrap(working)
    assert found.usable and runs_of(runs) == 3  # version, help, trial
    # A new process (the in-process cache emptied): the answer comes from the file.
    detect_bubblewrap.cache_clear()
    again = detect_bubblewrap(working)
    assert again == found and runs_of(runs) == 3
    # The binary changes (an upgrade, or a broken one): probed again, and not kept.
    Path(working).write_text(
        Path(working).read_text().replace("*) exit 0;;", "*) echo 'bwrap: no userns' >&2; exit 1;;")
    )
    os.utime(working, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    detect_bubblewrap.cache_clear()
    broken = detect_bubblewrap(working)
    assert not broken.usable and "no userns" in broken.reason and runs_of(runs) == 6
    detect_bubblewrap.cache_clear()
    assert (
        not detect_bubblewrap(working).usable and runs_of(runs) == 9
    )  # an unusable result is never kept
    detect_bubblewrap.cache_clear()


def test_the_probe_cache_can_be_turned_off_and_survives_a_damaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    working, runs = counting_bwrap(tmp_path, "exit 0")
    monkeypatch.setenv("GATEHOUSE_CACHE_DIR", "off")
    assert disk_cache.cache_dir() is None
    assert detect_bubblewrap(working).usable
    detect_bubblewrap.cache_clear()
    assert detect_bubblewrap(working).usable and runs_of(runs) == 6
    monkeypatch.setenv("GATEHOUSE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "bwrap-probe.json").write_text("{not json")
    detect_bubblewrap.cache_clear()
    assert (
        detect_bubblewrap(working).usable and runs_of(runs) == 9
    )  # probed, and the file rewritten
    detect_bubblewrap.cache_clear()
    assert detect_bubblewrap(working).usable and runs_of(runs) == 9
    detect_bubblewrap.cache_clear()


def test_a_large_head_decodes_without_leaving_the_collector_a_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The objects of a large head go straight to the oldest generation (no young
    collection walks them twice); they stay collectable, and an application's own
    frozen objects stay frozen."""
    import gc

    from langchain_core.messages import AIMessage, HumanMessage

    from gatehouse.graph.store import head
    from gatehouse.graph.store.saver import compact_serde

    serde = compact_serde() if callable(compact_serde) else compact_serde
    messages = [
        HumanMessage(f"question {i}", id=f"h{i}") if i % 2 else AIMessage(f"answer {i}", id=f"a{i}")
        for i in range(2 * head.AGE_AT_ONCE)
    ]
    rows = [(n, data) for _, n, data in head.blocks(messages, 0, serde)]
    gc.collect()
    decoded = head.decode(rows, len(messages), serde)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert decoded == messages and gc.isenabled()
    assert all(id(m) in oldest for m in decoded)  # none left young: no young collection walks them
    assert gc.get_freeze_count() == 0
    # An application that froze objects itself keeps them frozen (and pays the walk).
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert head.decode(rows, len(messages), serde) == messages
        # Not `== frozen`: a thread left by an earlier test may free a few frozen objects
        # meanwhile. Unfreezing the application's objects would drop the count to ~0.
        assert gc.get_freeze_count() >= frozen - 100
    finally:
        gc.unfreeze()


def test_remembered_token_counts_are_langchains_and_follow_a_changed_message() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from gatehouse.graph.agent.builtin_hooks.compaction import Compaction
    from gatehouse.graph.agent.builtin_hooks.token_memo import count_tokens_remembered

    history = [
        SystemMessage("be brief"),
        HumanMessage("list the files", name="ana"),
        AIMessage("", tool_calls=[{"name": "list_files", "args": {"path": "."}, "id": "c1"}]),
        ToolMessage("a.txt\nb.txt", tool_call_id="c1"),
        AIMessage(
            [
                {"type": "text", "text": "two files"},
                {"type": "image_url", "image_url": {"url": "x"}},
            ]
        ),
        {"role": "user", "content": "thanks"},
    ]
    for _ in range(2):  # counted, then remembered: the same numbers
        assert count_tokens_remembered(history) == count_tokens_approximately(history)
        assert all(count_tokens_remembered([m]) == count_tokens_approximately([m]) for m in history)
    history[
        1
    ].content = "list every file in the workspace, with sizes"  # changed in place: counted again
    assert count_tokens_remembered(history) == count_tokens_approximately(history)
    assert Compaction().count_tokens is count_tokens_remembered
    mine = lambda messages: 7  # noqa: E731
    assert Compaction(count_tokens=mine).count_tokens is mine


def test_opening_builds_no_argument_schema_and_a_call_builds_only_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process that opens a session (a real client: the tools' definitions come
    from the disk cache) and runs one tool builds that tool's schema only."""
    from langchain_openai import ChatOpenAI

    import gatehouse.tools.base
    from gatehouse.graph import open_session
    from gatehouse.tools import definitions

    monkeypatch.setenv("GATEHOUSE_CACHE_DIR", str(tmp_path / "cache"))
    # This process may have made the definitions already (kept in memory, not written
    # to this test's cache folder): the first open below must make and keep them.
    monkeypatch.setattr(definitions, "_kept", {})
    settings = Settings(db=str(tmp_path / "g.sqlite"), workspace=str(tmp_path / "ws"))
    client = ChatOpenAI(model="m", api_key="sk-test", base_url="http://127.0.0.1:9/v1")  # type: ignore[arg-type]
    open_session(settings, model=client).close()  # the first open ever: definitions made and kept
    assert (tmp_path / "cache" / definitions.FILE).exists()
    built: list[str] = []
    real = gatehouse.tools.base.fast_schema

    def counting(name: str, fn: object, **kw: object) -> object:
        built.append(name)
        return real(name, fn, **kw)  # type: ignore[arg-type]

    # A new process: nothing made yet in memory.
    monkeypatch.setattr(gatehouse.tools.base, "fast_schema", counting)
    monkeypatch.setattr(gatehouse.tools.base, "_schemas", {})
    monkeypatch.setattr(definitions, "_kept", {})
    gatehouse.tools.base._bound_schema.cache_clear()
    session = open_session(settings, model=client)
    try:
        agent_tools = session.agent.gatehouse_tools  # type: ignore[attr-defined]
        assert built == []
        assert all(
            "args_schema" not in t.__dict__
            for t in agent_tools.values()
            if t.name != "read_tool_output"
        )
        (tmp_path / "ws" / "a.txt").write_text("one\ntwo\n")
        assert "two" in agent_tools["read_file"].invoke({"path": "a.txt"})
        assert built == ["read_file"]
        with pytest.raises(ValidationError):  # and its arguments are checked
            agent_tools["read_file"].invoke({"path": "a.txt", "start_line": 0})
    finally:
        session.close()
        gatehouse.tools.base._bound_schema.cache_clear()


def test_a_tool_whose_source_file_changes_gets_a_new_definition_key(tmp_path: Path) -> None:
    """On disk, a definition made on first use is keyed by its function's file: an
    edited file (a new default, a new constraint) is never read stale."""
    import importlib.util

    from gatehouse.tools import definitions

    source = tmp_path / "note_tools.py"

    def load(text: str, mtime_ns: int) -> object:
        source.write_text(text)
        os.utime(source, ns=(mtime_ns, mtime_ns))
        spec = importlib.util.spec_from_file_location("note_tools", source)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module.take_note  # type: ignore[attr-defined]

    text = (
        "from gatehouse.tools.base import gatehouse_tool\n\n"
        "@gatehouse_tool(risk='write')\n"
        "def take_note(text: str, lines: int = {n}) -> str:\n"
        "    '''Write a note.'''\n"
        "    return text\n"
    )
    first = load(text.format(n=1), 1_000_000_000)
    same = load(text.format(n=1), 1_000_000_000)
    edited = load(text.format(n=2), 2_000_000_000)
    assert definitions.disk_key(first) == definitions.disk_key(same)  # type: ignore[arg-type]
    assert definitions.disk_key(edited) != definitions.disk_key(first)  # type: ignore[arg-type]
    assert "args_schema" not in first.__dict__  # the key did not make the schema
