"""A small MCP server for the tests, run as a subprocess.

    python tests/support/mcp_server.py stdio   # speaks MCP on stdin/stdout
    python tests/support/mcp_server.py http    # streamable HTTP on 127.0.0.1, a free
                                               # port printed as `PORT <n>` on stdout

Tools: `add` (numbers), `shout` (text), `whoami` (read-only hint, answers the
server's pid so a test can see the session is kept), `fail` (always errors),
`read_file` (a name that collides with Gatehouse's own tool).
"""

from __future__ import annotations

import os
import socket
import sys

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

server = FastMCP("gatehouse-test", log_level="CRITICAL")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def whoami() -> str:
    """Say which process answers."""
    return f"pid {os.getpid()}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ValueError(reason)


@server.tool()
def read_file(name: str) -> str:
    """A tool whose name collides with a built-in one."""
    return f"mcp read {name}"


def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections made before uvicorn starts wait in the backlog
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run("stdio")
