"""What a chat model is shown of each tool: its OpenAI function definition (name,
description, JSON schema of the arguments), made once and kept.

LangChain makes a definition from a tool on every `bind_tools`: a subset model of the
argument schema (`tool_call_schema`, memoised per tool object only), its core schema
and its JSON schema, ~1 ms a tool. A session opens with new tool objects, so every
open paid ~11 ms for the ten default tools, and a new process more (the schemas'
validators are built for it). Here a definition is kept for the process (keyed by the
tool's name, description and schema object, which tools/base.py shares across opens)
and on disk in Gatehouse's cache folder (tools/disk_cache.py), keyed by everything it
is made from: the name, the description, each argument's field (type, default,
constraints, description) and the versions of LangChain and pydantic. Only schemas of
plain types (builtins, `typing` forms, literals, constraints) are kept on disk: their
fields' text says all they are.

The definitions are given to `bind_tools` as OpenAI function dicts, which every
LangChain chat model takes (`convert_to_openai_tool` turns one into what it turns the
tool into, `strict` included).

A tool whose schema is made on first use (tools/cached_tool.py) is keyed by what its
schema will be made from instead (`SchemaOnFirstUse`: in the process, its signature; on
disk, its function's file and the files of the types it names, as text), so finding
its definition does not make the schema.

A definition only ever tells the model what to send. A call's arguments are checked
against the tool's own schema (tools/base.py), never against a definition, so a stale
one could at worst make the model send arguments the check refuses.
"""

from __future__ import annotations

import hashlib
import json
import threading
import types
import typing
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from tools import disk_cache
from tools.cached_tool import schema_on_first_use

__all__ = ["tool_definition", "tool_definitions", "tool_name"]

FILE = "tool-definitions.json"
VERSION = 1  # of this file's format and of how a definition is made
# Every open reads the whole file, and a change to a tool's file (an upgrade) adds new
# keys: 256 entries grew it to ~100 KB, ~1 ms of each open. 64 hold several toolsets.
MAX_ENTRIES = 64

_kept: dict[tuple[str, str, object], dict[str, Any]] = {}
_lock = threading.Lock()


def tool_definitions(tools: Sequence[BaseTool]) -> list[dict[str, Any]]:
    """The OpenAI function definition of each tool, as `convert_to_openai_function`
    makes it."""
    found: list[dict[str, Any] | None] = [_in_process(t) for t in tools]
    if all(d is not None for d in found):
        return typing.cast(list[dict[str, Any]], found)
    on_disk = disk_cache.read_entries(FILE)
    new: dict[str, Any] = {}
    for i, t in enumerate(tools):
        if found[i] is not None:
            continue
        key = disk_key(t)
        stored = on_disk.get(key) if key is not None else None
        if _is_definition(stored, t.name):
            definition = typing.cast(dict[str, Any], stored)
        else:
            definition = _make(t)
            if key is not None:
                new[key] = definition
        found[i] = _keep(t, definition)
    disk_cache.write_entries(FILE, new, keep=MAX_ENTRIES)
    return typing.cast(list[dict[str, Any]], found)


def tool_definition(tool: BaseTool) -> dict[str, Any]:
    return tool_definitions([tool])[0]


def tool_name(tool: Any) -> str:
    """The name of what `bind_tools` is given: a tool, a definition or a function."""
    if isinstance(tool, dict):
        return str(tool.get("function", tool).get("name", tool))
    return str(getattr(tool, "name", None) or getattr(tool, "__name__", tool))


def _make(tool: BaseTool) -> dict[str, Any]:
    # Imported here: only a process that makes a definition needs it.
    from langchain_core.utils.function_calling import convert_to_openai_function

    return convert_to_openai_function(tool)


def _process_key(tool: BaseTool) -> tuple[str, str, object] | None:
    if (lazy := schema_on_first_use(tool)) is not None:
        return (tool.name, tool.description, lazy.key)
    schema = tool.args_schema
    if isinstance(schema, dict):
        return None  # a JSON schema given as it is: LangChain's conversion costs nothing
    return (tool.name, tool.description, schema)


def _in_process(tool: BaseTool) -> dict[str, Any] | None:
    key = _process_key(tool)
    if key is None:
        return _make(tool)
    with _lock:
        return _kept.get(key)


def _keep(tool: BaseTool, definition: dict[str, Any]) -> dict[str, Any]:
    key = _process_key(tool)
    if key is not None:
        with _lock:
            definition = _kept.setdefault(key, definition)
    return definition


def _is_definition(value: Any, name: str) -> bool:
    return isinstance(value, dict) and value.get("name") == name and "parameters" in value


def disk_key(tool: BaseTool) -> str | None:
    """The cache key of a tool's definition: a hash of all it is made from (for a
    schema made on first use: the text of where it will be made from). None when the
    schema is not made of plain types (its text would not say all it is)."""
    import langchain_core
    import pydantic

    common = [VERSION, langchain_core.__version__, pydantic.VERSION, tool.name, tool.description]
    if (lazy := schema_on_first_use(tool)) is not None:
        source = lazy.source()
        return None if source is None else _hash([*common, "source", source])
    schema = tool.args_schema
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        return None
    fields = schema.model_fields
    if not all(_plain(f.annotation) for f in fields.values()):
        return None
    return _hash(
        [
            *common,
            schema.__name__,
            schema.__doc__,
            [(name, repr(field)) for name, field in fields.items()],
        ]
    )


def _hash(made_from: list[Any]) -> str:
    return hashlib.sha256(json.dumps(made_from, default=repr).encode()).hexdigest()


_PLAIN_TYPES = (str, int, float, bool, bytes, type(None), typing.Any)


def _plain(annotation: Any) -> bool:
    """Builtins and `typing` forms over them (Optional, list, dict, Literal, Annotated):
    types whose repr says all they are, unlike a model or an enum."""
    if annotation in _PLAIN_TYPES or annotation in (list, dict, tuple, set):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return all(
            isinstance(v, str | int | bool | type(None)) for v in typing.get_args(annotation)
        )
    if origin is typing.Annotated:
        return _plain(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, dict, tuple, set, frozenset):
        return all(a is Ellipsis or _plain(a) for a in typing.get_args(annotation))
    return False
