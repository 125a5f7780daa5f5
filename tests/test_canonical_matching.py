"""Policy rules and "always allow" grants match canonical forms, never raw strings
(issue 29, item 5): each attack from the issue through the policy as the agent uses
it — a scripted model emitting the call, run by Session or the raw compiled graph."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.agent.policy import Grant, Policy
from gatehouse.graph.store import open_storage
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.http import canonical_url, make_http_tool
from gatehouse.tools.sandbox import choose_sandbox
from gatehouse.tools.shell import make_shell_tool
from gatehouse.tools.workspace import Workspace

# The README's own example rule.
README_RULE = {
    "write_file": {"mode": "ask", "rules": [{"arg": "path", "glob": "notes/*", "mode": "allow"}]}
}


def session_with(
    tmp_path: Path, tools: list[BaseTool], script: list[Any], **kwargs: Any
) -> Session:
    storage = open_storage(str(tmp_path / "gatehouse.db"))
    graph = build_graph(
        model=ScriptedModel(script=script),
        tools=tools,
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
        **kwargs,
    )
    return Session(graph, storage, tools)


def asked(events: list[Any]) -> list[str]:
    """The tool call ids the person was asked about."""
    return [
        a["tool_call_id"]
        for e in events
        if e.type == "approval_required"
        for a in e.request["action_requests"]
    ]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    return Workspace(root)


def test_readme_rule_notes_star_never_covers_a_dotdot_path(tmp_path: Path, ws: Workspace) -> None:
    turn = ai(
        "",
        tool_call("write_file", {"path": "notes/a.md", "content": "fine"}, "w1"),
        tool_call(
            "write_file",
            {"path": "notes/../.git/config", "content": "[core]\nfsmonitor = evil\n"},
            "w2",
        ),
        tool_call("write_file", {"path": "./notes//b.md", "content": "also fine"}, "w3"),
    )
    session = session_with(tmp_path, make_file_tools(ws), [turn, "done"], policy=README_RULE)
    events = session.send("t1", "write").collect()
    assert asked(events) == ["w2"], "only the path that leaves notes/ is asked about"
    assert (ws.root / "notes" / "a.md").read_text() == "fine"
    assert (ws.root / "notes" / "b.md").read_text() == "also fine"
    assert "fsmonitor" not in (ws.root / ".git" / "config").read_text(), (
        "nothing ran before the person decided"
    )
    session.resume("t1", {"decisions": [{"type": "reject", "message": "no"}]}).collect()
    assert "fsmonitor" not in (ws.root / ".git" / "config").read_text()


def test_readme_rule_through_the_raw_graph(tmp_path: Path, ws: Workspace) -> None:
    turn = ai("", tool_call("write_file", {"path": "notes/../.git/config", "content": "x"}, "w1"))
    storage = open_storage(str(tmp_path / "g.db"))
    graph = build_graph(
        model=ScriptedModel(script=[turn, "done"]),
        tools=make_file_tools(ws),
        checkpointer=storage.checkpointer,
        decisions=storage.decisions,
        journal=storage.journal,
        policy=README_RULE,
    )
    cfg = {"configurable": {"thread_id": "raw"}}
    out = graph.invoke({"messages": [("user", "go")]}, cfg)
    assert "__interrupt__" in out, "the raw graph pauses for the dot-dot path"
    assert (ws.root / ".git" / "config").read_text() == "[core]\n"
    graph.invoke(Command(resume={"decisions": [{"type": "reject"}]}), cfg)
    assert (ws.root / ".git" / "config").read_text() == "[core]\n"


def test_a_symlink_inside_notes_is_matched_by_where_it_leads(tmp_path: Path, ws: Workspace) -> None:
    (ws.root / "notes" / "git").symlink_to("../.git")
    turn = ai(
        "",
        tool_call(
            "write_file",
            {"path": "notes/git/hooks/pre-commit", "content": "#!/bin/sh\nevil\n"},
            "w1",
        ),
    )
    session = session_with(tmp_path, make_file_tools(ws), [turn, "done"], policy=README_RULE)
    assert asked(session.send("t1", "write").collect()) == ["w1"]
    assert not (ws.root / ".git" / "hooks" / "pre-commit").exists()


def test_an_always_allow_pattern_never_covers_a_path_that_leaves_it(
    tmp_path: Path, ws: Workspace
) -> None:
    (ws.root / "notes" / "keep.md").write_text("k")
    script = [
        ai("", tool_call("write_file", {"path": "notes/first.md", "content": "1"}, "a1")),
        "ok",
        ai(
            "",
            tool_call("write_file", {"path": "notes/second.md", "content": "2"}, "a2"),
            tool_call(
                "write_file", {"path": "notes/../.git/hooks/pre-commit", "content": "evil"}, "a3"
            ),
            tool_call(
                "move_file", {"source": "notes/keep.md", "destination": ".git/hooks/pre-push"}, "a4"
            ),
            tool_call(
                "move_file", {"source": "notes/keep.md", "destination": "notes/kept.md"}, "a5"
            ),
        ),
        "ok",
    ]
    session = session_with(tmp_path, make_file_tools(ws), script)
    session.send("t1", "first").collect()
    session.resume("t1", {"decisions": [{"type": "approve", "always_allow": "notes/*"}]}).collect()
    # The move grant is a pattern grant too: granted on a move inside notes/.
    events = session.send("t1", "second").collect()
    assert sorted(asked(events)) == ["a3", "a4", "a5"], (
        "moves were never granted; the escaping write asks"
    )
    assert (ws.root / "notes" / "second.md").read_text() == "2"
    assert not (ws.root / ".git" / "hooks" / "pre-commit").exists()


def test_a_move_pattern_grant_needs_both_ends_inside_the_pattern(ws: Workspace) -> None:
    tools = {t.name: t for t in make_file_tools(ws)}
    (ws.root / "notes" / "a").write_text("a")
    grants = [Grant("move_file", "notes/*")]
    policy = Policy()
    inside = policy.evaluate(
        "move_file", {"source": "notes/a", "destination": "notes/b"}, tools["move_file"], grants
    )
    out = policy.evaluate(
        "move_file",
        {"source": "notes/a", "destination": "notes/../.git/hooks/x"},
        tools["move_file"],
        grants,
    )
    into = policy.evaluate(
        "move_file", {"source": ".git/config", "destination": "notes/c"}, tools["move_file"], grants
    )
    assert (inside.mode, out.mode, into.mode) == ("allow", "ask", "ask")
    # A deny rule matches the canonical form, however the path is spelled.
    deny = Policy.from_mapping({"write_file": {"rules": [{"glob": ".git/*", "mode": "deny"}]}})
    assert (
        deny.evaluate(
            "write_file", {"path": "notes/../.git/config", "content": ""}, tools["write_file"]
        ).mode
        == "deny"
    )
    # A path that leaves the workspace matches no rule and no grant; the tool refuses it.
    star = Policy.from_mapping({"write_file": {"rules": [{"glob": "*", "mode": "allow"}]}})
    assert (
        star.evaluate("write_file", {"path": "../outside", "content": ""}, tools["write_file"]).mode
        == "ask"
    )


# -- URLs ----------------------------------------------------------------------


class Recorder(BaseHTTPRequestHandler):
    seen: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        if self.path.startswith("/public/go?to="):  # an open redirect
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = f"you reached {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[str]:
    Recorder.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_canonical_url_forms() -> None:
    base = "http://127.0.0.1:8618"
    for sneaky in (
        "/public/../admin/x",
        "/public/%2e%2e/admin/x",
        "/public/%2E%2E%2Fadmin/x",
        "/public/..%2fadmin/x",
        "/public/./%2e./admin/x",
        "/public/..;/admin/x",
        "/public\\..\\admin/x",
        "/public/..%5Cadmin/x",
    ):
        assert canonical_url(base + sneaky) == base + "/admin/x"
    assert canonical_url("HTTP://Example.COM:80/a/%7e/b#frag") == "http://example.com/a/~/b"
    assert canonical_url("https://h:443/%e2%82%ac?q=%2e") == "https://h/%E2%82%AC?q=."


def test_an_http_rule_for_public_never_lets_a_get_reach_admin(tmp_path: Path, server: str) -> None:
    policy = {
        "http_request": {
            "mode": "ask",
            "rules": [{"arg": "url", "glob": f"{server}/public/*", "mode": "allow"}],
        }
    }
    turn = ai(
        "",
        tool_call("http_request", {"url": f"{server}/public/page"}, "h1"),
        tool_call("http_request", {"url": f"{server}/public/../admin/delete-everything"}, "h2"),
        tool_call("http_request", {"url": f"{server}/public/%2e%2e/admin/delete-everything"}, "h3"),
        tool_call("http_request", {"url": f"{server}/public/..%2Fadmin/delete-everything"}, "h4"),
        tool_call(
            "http_request", {"url": f"{server.upper().replace('HTTP', 'http')}/PUBLIC/x"}, "h5"
        ),
    )
    session = session_with(tmp_path, [make_http_tool()], [turn, "done"], policy=policy)
    events = session.send("t1", "fetch").collect()
    assert sorted(asked(events)) == ["h2", "h3", "h4", "h5"]
    assert Recorder.seen == ["/public/page"], "nothing reached /admin before a person decided"
    card = next(e for e in events if e.type == "approval_required").request
    previews = " ".join(str(a) for a in card["action_requests"])
    assert f"GET {server}/admin/delete-everything" in previews, (
        "the card shows the URL that would be sent"
    )
    # Approving the encoded one sends exactly what the card showed: the canonical URL.
    decisions = [
        {"type": "approve"} if a["tool_call_id"] == "h3" else {"type": "reject"}
        for a in card["action_requests"]
    ]
    session.resume("t1", {"decisions": decisions}).collect()
    assert Recorder.seen == ["/public/page", "/admin/delete-everything"]


def test_an_allow_listed_host_runs_free_with_the_canonical_url(tmp_path: Path, server: str) -> None:
    host = server.removeprefix("http://")
    turn = ai("", tool_call("http_request", {"url": f"{server}/a/b/%2e%2e/c"}, "h1"))
    session = session_with(tmp_path, [make_http_tool([host])], [turn, "done"])
    events = session.send("t1", "fetch").collect()
    assert asked(events) == [] and Recorder.seen == ["/a/c"]


# -- a pattern grant of "*" -----------------------------------------------------


def test_an_always_allow_pattern_star_is_a_pattern_grant_not_the_whole_tool(
    tmp_path: Path, ws: Workspace
) -> None:
    shell = make_shell_tool(ws, sandbox=choose_sandbox("off", ws.root))
    script = [
        ai("", tool_call("run_command", {"command": "echo one"}, "r1")),
        "ok",
        ai(
            "",
            tool_call("run_command", {"command": "echo two"}, "r2"),
            tool_call("run_command", {"command": "echo three; touch chained"}, "r3"),
            tool_call("run_command", {"command": "touch networked", "network": True}, "r4"),
        ),
        "ok",
    ]
    session = session_with(tmp_path, [shell], script)
    session.send("t1", "first").collect()
    session.resume("t1", {"decisions": [{"type": "approve", "always_allow": "*"}]}).collect()
    events = session.send("t1", "second").collect()
    assert sorted(asked(events)) == ["r3", "r4"], (
        "docs: pattern grants never cover chained commands or the network"
    )
    outputs = {
        m.tool_call_id: m.content for m in session.view("t1").messages if isinstance(m, ToolMessage)
    }
    assert "two" in str(outputs["r2"])
    assert not (ws.root / "chained").exists() and not (ws.root / "networked").exists()
    # `true` stays the whole-tool grant the docs describe (it covers the network).
    session.resume(
        "t1", {"decisions": [{"type": "reject"}, {"type": "approve", "always_allow": True}]}
    ).collect()
    assert (ws.root / "networked").exists() and not (ws.root / "chained").exists()


def test_an_empty_always_allow_pattern_is_refused_and_changes_nothing(
    tmp_path: Path, ws: Workspace
) -> None:
    turn = ai("", tool_call("write_file", {"path": "x.md", "content": "x"}, "w1"))
    session = session_with(tmp_path, make_file_tools(ws), [turn, "done"])
    session.send("t1", "go").collect()
    with pytest.raises(Exception, match="pattern must not be empty"):
        session.resume("t1", {"decisions": [{"type": "approve", "always_allow": "  "}]}).collect()
    assert not (ws.root / "x.md").exists()
    assert session.view("t1").pending is not None


def test_deny_rules_hold_on_the_canonical_form_and_on_the_text_as_written(ws: Workspace) -> None:
    tools = {t.name: t for t in make_file_tools(ws)}
    write = tools["write_file"]
    no_dotdot = Policy.from_mapping({"write_file": {"rules": [{"regex": r"\.\.", "mode": "deny"}]}})
    assert (
        no_dotdot.evaluate("write_file", {"path": "notes/../a.md", "content": ""}, write).mode
        == "deny"
    )
    no_git = Policy.from_mapping({"write_file": {"rules": [{"glob": ".git/*", "mode": "deny"}]}})
    (ws.root / "notes" / "g").symlink_to("../.git")
    assert (
        no_git.evaluate("write_file", {"path": "notes/g/config", "content": ""}, write).mode
        == "deny"
    )
    assert (
        no_git.evaluate("write_file", {"path": "notes/ok.md", "content": ""}, write).mode == "ask"
    )


def test_an_open_redirect_under_an_allowed_path_is_not_followed(
    tmp_path: Path, server: str
) -> None:
    policy = {
        "http_request": {
            "mode": "ask",
            "rules": [{"arg": "url", "glob": f"{server}/public/*", "mode": "allow"}],
        }
    }
    turn = ai(
        "",
        tool_call("http_request", {"url": f"{server}/public/go?to=/admin/delete-everything"}, "h1"),
    )
    session = session_with(tmp_path, [make_http_tool()], [turn, "done"], policy=policy)
    events = session.send("t1", "fetch").collect()
    assert asked(events) == [] and Recorder.seen == ["/public/go?to=/admin/delete-everything"]
    result = next(m for m in session.view("t1").messages if isinstance(m, ToolMessage))
    assert "not followed" in str(result.content) and "/admin/delete-everything" in str(
        result.content
    )
    # On an allow-listed host, where any GET runs freely, the same redirect is followed.
    Recorder.seen = []
    host = server.removeprefix("http://")
    out = make_http_tool([host]).invoke({"url": f"{server}/public/go?to=/public/page"})
    assert "you reached /public/page" in out and Recorder.seen == [
        "/public/go?to=/public/page",
        "/public/page",
    ]
