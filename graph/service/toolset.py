"""The tool set of an agent, built from `Settings`. MCP connections are shared by every
call with the same config (a Streamlit rerun must not start new servers).
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.tools import BaseTool

from gatehouse.graph.service.access import load_access, private_paths
from gatehouse.graph.service.config import Settings
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.http import make_http_tool
from gatehouse.tools.sandbox import Limits, choose_sandbox, database_paths
from gatehouse.tools.shell import make_shell_tool
from gatehouse.tools.sql import make_sql_tool
from gatehouse.tools.workspace import Workspace

if TYPE_CHECKING:  # the MCP client is slow to import; only load it when servers are configured
    from gatehouse.tools.mcp import MCPServers

_lock = threading.Lock()
_mcp: dict[str, tuple[MCPServers, list[BaseTool]]] = {}


def build_tools(settings: Settings) -> list[BaseTool]:
    # Hidden from every tool: the database, the install secret, the config file.
    private: list[str | os.PathLike[str]] = [
        *database_paths(settings.db, Path(settings.workspace).expanduser().absolute()),
        *private_paths(settings.db, load_access(settings.access)),
        *([settings.source] if settings.source else []),
    ]
    ws = Workspace(settings.workspace, hidden=private)
    tools: list[BaseTool] = [
        *make_file_tools(ws),
        make_shell_tool(
            ws,
            allow=settings.shell_allow,
            timeout_s=settings.shell_timeout_s,
            sandbox=choose_sandbox(
                settings.shell_sandbox,
                ws.root,
                hide=[*private, *settings.shell_hide],
                show=settings.shell_show,
                env_names=settings.shell_env,
                limits=Limits(
                    memory_mb=settings.shell_memory_mb, max_processes=settings.shell_max_processes
                ),
            ),
        ),
        make_http_tool(settings.http_allow_hosts),
    ]
    if settings.sql_database:
        tools.append(make_sql_tool(settings.sql_database))
    if settings.mcp_servers:
        tools.extend(_mcp_tools(settings, {t.name for t in tools}))
    return tools


def mcp_errors() -> dict[str, str]:
    """Why configured MCP servers were not loaded, by server name."""
    with _lock:
        return {name: err for servers, _ in _mcp.values() for name, err in servers.errors.items()}


def _mcp_tools(settings: Settings, reserved: set[str]) -> list[BaseTool]:
    key = json.dumps(
        {"servers": settings.mcp_servers, "reserved": sorted(reserved)}, sort_keys=True, default=str
    )
    from gatehouse.tools.mcp import MCPServers

    with _lock:
        if key not in _mcp:
            servers = MCPServers(settings.mcp_servers)
            _mcp[key] = (servers, servers.load(reserved))
        return list(_mcp[key][1])


def close_tools() -> None:
    """Close MCP sessions (stdio servers exit). Safe to call more than once."""
    with _lock:
        loaded = list(_mcp.values())
        _mcp.clear()
    for servers, _ in loaded:
        servers.close()


atexit.register(close_tools)
