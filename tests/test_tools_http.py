"""http_request against a local server on 127.0.0.1 only: GETs to allow-listed hosts
run freely, the rest ask; HTML becomes text; time, size and redirects are bounded."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from gatehouse.graph import Policy, ScriptedModel, ai, build_graph, tool_call
from gatehouse.graph.service.demo_model import DemoModel
from gatehouse.tools.http import HTTPToolError, host_allowed, make_http_tool

PAGE = b"""<!doctype html><html><head><title>Shop  news</title><style>p{color:red}</style>
<script>var secret = "do not show";</script></head>
<body><h1>Welcome</h1><p>Milk is <b>cheap</b>&nbsp;today &amp; tomorrow.</p><ul><li>one</li><li>two</li></ul></body></html>"""


class Handler(BaseHTTPRequestHandler):
    received: list[tuple[str, str, bytes]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def send(
        self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        routes = {
            "/page": (200, PAGE, "text/html; charset=utf-8", None),
            "/data.json": (200, b'{"ok": true}', "application/json", None),
            "/big": (200, b"x" * 50_000, "text/plain", None),
            "/image": (200, b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png", None),
            "/missing": (404, b"no such page", "text/plain", None),
            "/hop": (302, b"", "text/plain", {"Location": "/page"}),
            "/away": (302, b"", "text/plain", {"Location": f"http://localhost:{port}/page"}),
        }
        if self.path == "/slow":
            time.sleep(1.0)
            self.send(200, b"late", "text/plain")
            return
        status, body, ctype, extra = routes.get(self.path, (404, b"?", "text/plain", None))
        self.send(status, body, ctype, extra)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Handler.received.append(("POST", self.path, body))
        self.send(201, b"created", "text/plain")


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def http() -> BaseTool:
    return make_http_tool(["127.0.0.1"], timeout_s=5)


def mode(tool: BaseTool, args: dict) -> str:
    return Policy.from_mapping({}).evaluate("http_request", args, tool, []).mode


def test_get_to_an_allow_listed_host_runs_freely_anything_else_asks(
    http: BaseTool, base_url: str
) -> None:
    assert mode(http, {"url": f"{base_url}/page"}) == "allow"
    assert mode(http, {"url": f"{base_url}/page", "method": "HEAD"}) == "allow"
    assert mode(http, {"url": "http://example.invalid/page"}) == "ask"
    assert mode(http, {"url": f"{base_url}/form", "method": "POST", "body": "a=1"}) == "ask"
    assert mode(http, {"url": f"{base_url}/x", "method": "DELETE"}) == "ask"
    # The allowed name as user info does not make another host allowed.
    assert mode(http, {"url": "http://127.0.0.1@example.invalid/"}) == "ask"
    assert mode(http, {"url": "http://127.0.0.1.example.invalid/"}) == "ask"
    assert mode(http, {"url": "file:///etc/passwd"}) == "ask"


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "internal-admin.example"},  # another virtual host behind the same address
        {"X-HTTP-Method-Override": "DELETE"},  # a GET the server treats as a DELETE
        {"x-method-override": "PUT"},
        {"X-HTTP-Method": "POST"},
        {"Authorization": "Bearer abc"},  # speaks for someone
        {"Cookie": "session=abc"},
        {"X-Forwarded-For": "10.0.0.1"},
        {"Content-Type": "application/json"},
        {"Accept": "text/html", "X-Api-Key": "k"},  # one harmless header does not excuse another
        {"Accept": "text/html\r\nX-Injected: 1"},
    ],
)
def test_a_get_whose_headers_change_what_it_does_asks(
    http: BaseTool, base_url: str, headers: dict
) -> None:
    assert mode(http, {"url": f"{base_url}/page", "headers": headers}) == "ask"


def test_a_get_with_only_negotiating_headers_stays_free(http: BaseTool, base_url: str) -> None:
    headers = {
        "Accept": "application/json",
        "accept-language": "en",
        "If-None-Match": '"abc"',
        "Range": "bytes=0-99",
    }
    assert mode(http, {"url": f"{base_url}/page", "headers": headers}) == "allow"
    assert mode(http, {"url": f"{base_url}/page", "headers": {}}) == "allow"


def test_allow_list_entries_match_hosts_subdomains_and_ports() -> None:
    allow = ["docs.python.org", "*.example.com", "localhost:8080"]
    assert host_allowed("https://docs.python.org/3/", allow)
    assert host_allowed("https://api.example.com/v1", allow)
    assert not host_allowed("https://example.com.evil.test/", allow)
    assert host_allowed("http://localhost:8080/", allow)
    assert not host_allowed("http://localhost:9090/", allow)
    assert not host_allowed("ftp://docs.python.org/", allow)


def test_html_comes_back_as_text(http: BaseTool, base_url: str) -> None:
    out = http.invoke({"url": f"{base_url}/page"})
    head, body = out.split("\n\n", 1)
    assert head == f"HTTP 200 OK\nURL: {base_url}/page\ncontent-type: text/html; charset=utf-8"
    assert body == "# Shop news\n\nWelcome\nMilk is cheap today & tomorrow.\none\ntwo"
    assert "secret" not in out and "color" not in out


def test_json_status_and_binary_bodies(http: BaseTool, base_url: str) -> None:
    assert http.invoke({"url": f"{base_url}/data.json"}).endswith('\n\n{"ok": true}')
    assert http.invoke({"url": f"{base_url}/missing"}).startswith("HTTP 404 Not Found")
    assert http.invoke({"url": f"{base_url}/image"}).endswith(
        "(binary content, 208 bytes; not shown)"
    )


def test_size_cap_and_timeout(base_url: str) -> None:
    small = make_http_tool(["127.0.0.1"], max_bytes=1000, timeout_s=0.3)
    out = small.invoke({"url": f"{base_url}/big"})
    assert "(body cut at 1000 bytes)" in out and out.endswith("\n\n" + "x" * 1000)
    started = time.monotonic()
    with pytest.raises(HTTPToolError, match="Timeout"):
        small.invoke({"url": f"{base_url}/slow"})
    assert time.monotonic() - started < 0.9


def test_redirects_stay_on_the_host_or_the_allow_list(http: BaseTool, base_url: str) -> None:
    assert "Welcome" in http.invoke({"url": f"{base_url}/hop"})
    # localhost is another host name, not on the list: the call stops and says where it led.
    out = http.invoke({"url": f"{base_url}/away"})
    assert out.startswith("HTTP 302 redirect to http://localhost:") and "not followed" in out


def test_bad_urls_are_clear_errors(http: BaseTool) -> None:
    with pytest.raises(HTTPToolError, match="only http and https"):
        http.invoke({"url": "file:///etc/passwd"})


def run(graph: Any, payload: Any, config: dict) -> None:
    for _ in graph.stream(payload, config, stream_mode=["updates", "custom"]):
        pass


def test_post_pauses_with_a_preview_and_is_sent_only_after_approval(
    http: BaseTool, base_url: str
) -> None:
    Handler.received.clear()
    args = {"url": f"{base_url}/orders", "method": "POST", "body": '{"item": "milk"}'}
    script = [ai("", tool_call("http_request", args, "p1")), "done"]
    graph = build_graph(
        model=ScriptedModel(script=script), tools=[http], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    run(graph, {"messages": [("user", "order milk")]}, config)

    (pending,) = graph.get_state(config).interrupts
    (action,) = pending.value["action_requests"]
    assert action["risk"] == "network"
    assert action["preview"] == f'POST {base_url}/orders\n\n{{"item": "milk"}}'
    assert Handler.received == []

    run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert Handler.received == [("POST", "/orders", b'{"item": "milk"}')]
    result = [m for m in graph.get_state(config).values["messages"] if isinstance(m, ToolMessage)][
        -1
    ]
    assert result.content.startswith("HTTP 201 Created")


def test_demo_model_fetches_an_allowed_page_without_asking(http: BaseTool, base_url: str) -> None:
    graph = build_graph(model=DemoModel(), tools=[http], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    run(graph, {"messages": [("user", f"fetch {base_url}/page")]}, config)
    assert not graph.get_state(config).interrupts
    assert "Milk is cheap" in graph.get_state(config).values["messages"][-1].content
