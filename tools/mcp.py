"""Tools from MCP servers (stdio and streamable HTTP), usable from the sync graph: one
session per server (the adapter opens one per call) on an event loop thread of its own,
a dead one reconnected on the next call. Their risk comes from the server's annotations.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, cast

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.sessions import Connection
from langchain_mcp_adapters.tools import load_mcp_tools

from gatehouse.graph.protocol.tools import Risk, ToolSpec, attach_spec

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 10.0
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


class MCPError(RuntimeError):
    """An MCP server could not be reached, or a tool call on it failed."""


class _Server:
    """One server: a task on the loop holds its session open until `close`."""

    def __init__(self, name: str, client: MultiServerMCPClient) -> None:
        self.name = name
        self.client = client
        self.session: Any = None
        self.tools: dict[str, BaseTool] = {}
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()  # set: the session is to close (or is gone)
        self._lock = asyncio.Lock()  # bound to the loop that first waits on it

    async def connect(self) -> None:
        """Open the session (entered and exited in one task, as anyio requires)."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stop = self._stop = asyncio.Event()

        async def hold() -> None:
            try:
                async with self.client.session(self.name) as session:
                    self.session = session
                    self.tools = {
                        t.name: t for t in await load_mcp_tools(session, server_name=self.name)
                    }
                    ready.set_result(None)
                    await stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc if isinstance(exc, Exception) else MCPError(repr(exc)))
                elif not isinstance(exc, asyncio.CancelledError):
                    log.warning("MCP server %r disconnected: %s", self.name, exc)
            finally:
                self.session = None

        self._task = asyncio.create_task(hold(), name=f"mcp-{self.name}")
        await ready

    async def call(self, tool_name: str, args: dict[str, Any]) -> tuple[str, Any]:
        async with self._lock:
            # `session` is set only while `hold` runs inside it.
            if self.session is None or self._stop.is_set():
                log.info("reconnecting to MCP server %r", self.name)
                await self.close()
                await self.connect()
        tool = self.tools.get(tool_name)
        if tool is None or not isinstance(tool, StructuredTool) or tool.coroutine is None:
            raise MCPError(f"the MCP server {self.name!r} no longer offers the tool {tool_name!r}")
        try:
            content, artifact = await tool.coroutine(**args)
        except ToolException as exc:  # the server answered with isError=True
            raise MCPError(f"the MCP tool {tool_name!r} reported an error: {exc}") from exc
        except Exception as exc:
            # A transport failure: drop the session so the next call reconnects.
            # This call is not retried: the tool may have had an effect already.
            self._stop.set()
            raise MCPError(
                f"the MCP server {self.name!r} failed during {tool_name!r}: {_describe(exc)}"
            ) from exc
        return _as_text(content), artifact

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, CLOSE_TIMEOUT_S)
        self._task = None


def _as_text(content: Any) -> str:
    """MCP content blocks as plain text, so every front end can show the result."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, Mapping):
            kind = block.get("type", "content")
            mime = block.get("mime_type") or ""
            where = block.get("url") or (f"{len(block.get('base64') or '')} base64 characters")
            parts.append(f"[{kind} {mime} {where}]".replace("  ", " "))
        else:
            parts.append(str(block))
    return "\n".join(parts)


def _describe(exc: BaseException) -> str:
    """The innermost causes, not anyio's "unhandled errors in a TaskGroup"."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_describe(e) for e in exc.exceptions))
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class MCPServers:
    """The configured MCP servers, connected on a private event loop thread."""

    def __init__(
        self,
        connections: Mapping[str, Mapping[str, Any]],
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        call_timeout_s: float = CALL_TIMEOUT_S,
    ) -> None:
        self.connections = {name: dict(conn) for name, conn in connections.items()}
        self.connect_timeout_s = connect_timeout_s
        self.call_timeout_s = call_timeout_s
        # Per server: why it could not be loaded (shown to the operator, not fatal).
        self.errors: dict[str, str] = {}
        self._servers: dict[str, _Server] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="gatehouse-mcp", daemon=True
        )
        self._thread.start()
        self._closed = False

    def _run(self, coro: Any, timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def load(self, reserved_names: Iterable[str] = ()) -> list[BaseTool]:
        """Every server's tools (unreachable ones in `errors`), a taken name as `server_tool`."""
        # Tables from the config file: the adapter checks each one's transport and keys.
        client = MultiServerMCPClient(cast("dict[str, Connection]", self.connections))
        taken = set(reserved_names)
        tools: list[BaseTool] = []
        for name in self.connections:
            server = _Server(name, client)
            try:
                self._run(server.connect(), self.connect_timeout_s)
            except Exception as exc:
                message = _describe(exc)
                if isinstance(exc, concurrent.futures.TimeoutError):
                    message = f"no answer within {self.connect_timeout_s:g}s"
                self.errors[name] = message
                log.warning("MCP server %r not loaded: %s", name, message)
                with contextlib.suppress(Exception):
                    self._run(server.close(), CLOSE_TIMEOUT_S)
                continue
            self._servers[name] = server
            for mcp_tool in server.tools.values():
                public = mcp_tool.name
                if public in taken:
                    public = f"{_NAME_OK.sub('_', name)}_{public}"
                taken.add(public)
                tools.append(self._wrap(server, mcp_tool, public))
        return tools

    def _wrap(self, server: _Server, mcp_tool: BaseTool, public: str) -> BaseTool:
        tool_name = mcp_tool.name

        def call(kwargs: dict[str, Any]) -> Any:
            if self._closed:
                raise MCPError("the MCP connections are closed")
            return server.call(tool_name, kwargs)

        def call_sync(**kwargs: Any) -> tuple[str, Any]:
            try:
                return self._run(call(kwargs), self.call_timeout_s)
            except concurrent.futures.TimeoutError as exc:
                raise MCPError(
                    f"the MCP tool {tool_name!r} on {server.name!r} did not answer within {self.call_timeout_s:g}s"
                ) from exc

        async def call_async(**kwargs: Any) -> tuple[str, Any]:
            return await asyncio.wrap_future(
                asyncio.run_coroutine_threadsafe(call(kwargs), self._loop)
            )

        description = (mcp_tool.description or tool_name).strip()
        schema = mcp_tool.args_schema
        if schema is None:  # the adapter gives the server's; a tool without one takes none
            schema = {"type": "object", "properties": {}}
        hints = mcp_tool.metadata or {}  # the server's annotations: readOnlyHint ...
        wrapped = StructuredTool(
            name=public,
            description=f"{description}\n\n(Tool from the MCP server {server.name!r}.)",
            args_schema=schema,
            func=call_sync,
            coroutine=call_async,
            response_format="content_and_artifact",
            metadata={**hints, "mcp_server": server.name, "mcp_tool": tool_name},
        )
        unread: Risk = "network" if hints.get("openWorldHint") else "execute"
        risk: Risk = "read" if hints.get("readOnlyHint") else unread
        return attach_spec(wrapped, ToolSpec(risk=risk, default="ask"))

    def close(self) -> None:
        """Close every session (stdio servers exit) and stop the loop thread."""
        if self._closed:
            return
        self._closed = True
        for server in self._servers.values():
            with contextlib.suppress(Exception):
                self._run(server.close(), CLOSE_TIMEOUT_S + 1)
        self._servers.clear()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
