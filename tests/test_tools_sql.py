"""sql_query: reads run freely, writes ask; "reads only" is SQLite's verdict, not a
string match; results are a compact, capped table."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from gatehouse.graph import Policy, ScriptedModel, ai, build_graph, tool_call
from gatehouse.graph.service.demo_model import DemoModel
from gatehouse.tools.sql import SQLError, make_sql_tool


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
    conn.executemany(
        "INSERT INTO items (name, price) VALUES (?, ?)",
        [(f"item {i}", i * 1.5) for i in range(1, 121)],
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def sql(db: Path) -> BaseTool:
    return make_sql_tool(str(db))


def count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM items").fetchone()[0]
    finally:
        conn.close()


def mode(tool: BaseTool, query: str) -> str:
    return Policy.from_mapping({}).evaluate("sql_query", {"query": query}, tool, []).mode


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM items",
        "  select name from items where price > 10 order by price desc",
        "WITH cheap AS (SELECT * FROM items WHERE price < 5) SELECT count(*) FROM cheap",
        "SELECT 'DELETE FROM items; DROP TABLE items'",  # write words inside a string
        "select * from items -- ; delete from items",
        "PRAGMA table_info(items)",
        "PRAGMA user_version",
        "SELECT name FROM sqlite_schema",
    ],
)
def test_statements_that_only_read_run_freely(sql: BaseTool, query: str) -> None:
    assert mode(sql, query) == "allow"


@pytest.mark.parametrize(
    "query",
    [
        "INSERT INTO items (name) VALUES ('x')",
        "update items set price = 0",
        "/* SELECT */ DELETE FROM items",  # starts like a read to a naive check
        "WITH gone AS (SELECT id FROM items) DELETE FROM items WHERE id IN gone",
        "SELECT 1; DELETE FROM items",  # a read followed by a write
        "DROP TABLE items",
        "CREATE TEMP TABLE t (a)",
        "PRAGMA user_version = 7",
        "ATTACH DATABASE 'other.db' AS other",
        "VACUUM",  # never reaches the authorizer: not proven to read
        "VACUUM INTO 'copy.db'",  # writes a file, even on a read-only connection
        "VACUUM INTO (SELECT '/tmp/out.db')",  # the subquery looks like a read to the authorizer
        "VACUUM main INTO (SELECT 'copy' || '.db')",
        "VACUUM INTO (WITH p(x) AS (SELECT 'copy.db') SELECT x FROM p)",
        "ATTACH (SELECT 'other.db') AS other",
        "PRAGMA wal_checkpoint(TRUNCATE)",
        "PRAGMA journal_mode = delete",
        "PRAGMA journal_mode",  # compiles to a JournalMode instruction, as its setting form does
        "PRAGMA optimize",
        "REINDEX",
        "ANALYZE",
        "SELECT load_extension('evil')",
        "select * from no_such_table",  # SQLite cannot compile it: cannot prove it reads
    ],
)
def test_statements_that_may_write_ask(sql: BaseTool, query: str) -> None:
    assert mode(sql, query) == "ask"


def test_results_are_a_compact_table_with_a_row_cap(sql: BaseTool) -> None:
    out = sql.invoke({"query": "SELECT id, name, price FROM items WHERE id <= 2"})
    assert (
        out
        == "id | name   | price\n---+--------+------\n1  | item 1 | 1.5\n2  | item 2 | 3.0\n(2 rows)"
    )
    many = sql.invoke({"query": "SELECT id FROM items"}).splitlines()
    assert many[-1] == "(50 rows; stopped at 50, more rows not shown)"
    assert many[2] == "1" and many[51] == "50"
    assert sql.invoke(
        {"query": "SELECT name FROM items WHERE price > ?", "params": [179]}
    ).endswith("item 120\n(1 row)")


def test_a_write_changes_data_once_run(db: Path, sql: BaseTool) -> None:
    assert sql.invoke({"query": "DELETE FROM items WHERE id > 100"}) == "OK: 20 row(s) changed."
    assert count(db) == 100
    out = sql.invoke({"query": "INSERT INTO items (name, price) VALUES ('new', 1) RETURNING id"})
    assert out == "id\n---\n101\n(1 row)" and count(db) == 101


def test_errors_are_clear_and_change_nothing(db: Path, sql: BaseTool) -> None:
    with pytest.raises(SQLError, match="no such table: nope"):
        sql.invoke({"query": "SELECT * FROM nope"})
    with pytest.raises(SQLError, match="one statement"):
        sql.invoke({"query": "SELECT 1; DELETE FROM items"})
    assert count(db) == 120


def test_runaway_query_is_stopped(db: Path) -> None:
    quick = make_sql_tool(str(db), timeout_s=0.2)
    forever = (
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    )
    with pytest.raises(SQLError, match="stopped after 0.2s"):
        quick.invoke({"query": forever})


def run(graph: Any, payload: Any, config: dict) -> None:
    for _ in graph.stream(payload, config, stream_mode=["updates", "custom"]):
        pass


def test_write_pauses_in_the_graph_and_runs_after_approval(db: Path, sql: BaseTool) -> None:
    script = [
        ai(
            "",
            tool_call("sql_query", {"query": "SELECT count(*) AS n FROM items"}, "r1"),
            tool_call(
                "sql_query", {"query": "DELETE FROM items WHERE price > ?", "params": [150]}, "w1"
            ),
        ),
        "done",
    ]
    graph = build_graph(
        model=ScriptedModel(script=script), tools=[sql], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    run(graph, {"messages": [("user", "clean up")]}, config)

    (pending,) = graph.get_state(config).interrupts
    (action,) = pending.value["action_requests"]  # only the write waits
    assert action["tool_call_id"] == "w1" and action["risk"] == "write"
    assert (
        "DELETE FROM items WHERE price > ?" in action["preview"]
        and "params: [150]" in action["preview"]
    )
    assert count(db) == 120

    run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    results = {
        m.tool_call_id: m.content
        for m in graph.get_state(config).values["messages"]
        if isinstance(m, ToolMessage)
    }
    assert results["r1"] == "n\n---\n120\n(1 row)"
    assert results["w1"] == "OK: 20 row(s) changed."
    assert count(db) == 100


def test_demo_model_runs_a_select(sql: BaseTool) -> None:
    graph = build_graph(model=DemoModel(), tools=[sql], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    run(graph, {"messages": [("user", "sql: select name from items where id = 7")]}, config)
    assert not graph.get_state(config).interrupts
    assert "item 7" in graph.get_state(config).values["messages"][-1].content


# -- functions on the free path: an explicit list (issue 29, item 10) -------------

NOT_LISTED = [
    "SELECT hex(fts3_tokenizer('simple'))",  # leaks a pointer
    "SELECT fts3_tokenizer('simple', x'4141414141414141')",  # installs one
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT fts5(NULL)",
    "SELECT rtreenode(2, x'000100000000')",
    "SELECT sqlite_log(1, 'x')",
    "SELECT name FROM items WHERE name = lower(fts3_tokenizer('simple'))",  # nested
]


@pytest.mark.parametrize("query", NOT_LISTED)
def test_a_function_outside_the_list_is_not_free(sql: BaseTool, query: str) -> None:
    assert mode(sql, query) == "ask"


def test_listed_functions_stay_free(sql: BaseTool) -> None:
    for query in (
        "SELECT upper(name), round(price, 1), json_object('n', name) FROM items LIMIT 2",
        "SELECT count(*), avg(price), group_concat(name) FROM items",
        "SELECT date('now'), sqrt(16), row_number() OVER (ORDER BY id) FROM items LIMIT 1",
    ):
        assert mode(sql, query) == "allow", query


def test_a_view_calling_an_unlisted_function_is_not_free(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE VIEW leak AS SELECT hex(fts3_tokenizer('simple')) AS p")
    conn.commit()
    conn.close()
    sql = make_sql_tool(str(db))
    assert mode(sql, "SELECT * FROM leak") == "ask"


def test_fts3_tokenizer_through_the_agent_asks_and_leaks_nothing(db: Path, sql: BaseTool) -> None:
    script = [
        ai(
            "",
            tool_call("sql_query", {"query": "SELECT hex(fts3_tokenizer('simple')) AS p"}, "x1"),
            tool_call(
                "sql_query", {"query": "SELECT upper(name) AS n FROM items WHERE id = 1"}, "r1"
            ),
        ),
        "done",
    ]
    graph = build_graph(
        model=ScriptedModel(script=script), tools=[sql], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    run(graph, {"messages": [("user", "look")]}, config)
    (pending,) = graph.get_state(config).interrupts
    assert [a["tool_call_id"] for a in pending.value["action_requests"]] == ["x1"]
    results = {
        m.tool_call_id: m.content
        for m in graph.get_state(config).values["messages"]
        if isinstance(m, ToolMessage)
    }
    assert results == {"r1": "n\n------\nITEM 1\n(1 row)"}, (
        "the listed read ran; the pointer was not read"
    )
    run(graph, Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), config)
    results = {
        m.tool_call_id: m.content
        for m in graph.get_state(config).values["messages"]
        if isinstance(m, ToolMessage)
    }
    assert "declined" in results["x1"]
