"""The narrow "always allow" a card offers first: exactly this command, or this file
(glob characters escaped), as one who approved `seq 1 3` rarely means "every later
command"; the whole tool is a second choice. None where it could not cover what it
says: a command with shell syntax or the network, a path outside the workspace, a move.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# As tools/allowlist.py's: a line with one of these is more than one simple command.
SHELL_SYNTAX = frozenset(";&|<>()`$\n\r\\{}!")
_GLOB = re.compile(r"([*?\[])")


def _escaped(text: str) -> str:
    return _GLOB.sub(r"[\1]", text)


@dataclass(frozen=True)
class Scope:
    pattern: str
    covers: str


def narrow_grant(name: str, args: Mapping[str, Any]) -> Scope | None:
    command = args.get("command")
    if isinstance(command, str):
        line = command.strip()
        if not line or line != command or SHELL_SYNTAX & set(line) or args.get("network"):
            return None
        return Scope(_escaped(line), f"`{name}` of exactly the command `{line}`")
    path = args.get("path")
    if isinstance(path, str) and "source" not in args:
        normal = posixpath.normpath(path.replace("\\", "/")).removeprefix("./")
        if not path.strip() or normal.startswith(("/", "..")) or normal == ".":
            return None
        return Scope(_escaped(normal), f"`{name}` of exactly the file `{normal}`")
    return None


def whole_tool(name: str) -> str:
    return f"every `{name}` call in this thread, whatever its arguments"
