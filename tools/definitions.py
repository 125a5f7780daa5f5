"""A tool's OpenAI function definition (what a chat model is shown), made once: LangChain
remakes one per `bind_tools` (~1 ms a tool); here it is kept for the process and on disk,
keyed by all it is made from (only plain-type schemas, whose repr says all they are). A
stale one can only draw arguments the tool refuses.
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from gatehouse.tools import disk_cache
from gatehouse.tools.base import schema_on_first_use

FILE = "tool-definitions.json"
VERSION = 1  # of this file's format and of how a definition is made
# Every open reads the whole file: 256 entries made ~100 KB, ~1 ms. 64 hold several toolsets.
MAX_ENTRIES = 64

# Read and filled with single dict operations, atomic without a lock.
_kept: dict[tuple[str, str, object], dict[str, Any]] = {}


def tool_definitions(tools: Sequence[BaseTool]) -> list[dict[str, Any]]:
    """Each tool's definition, as `convert_to_openai_function` makes it."""
    kept = [_process_key(t) for t in tools]
    found = [_make(t) if k is None else _kept.get(k) for t, k in zip(tools, kept, strict=True)]
    if all(d is not None for d in found):
        return typing.cast(list[dict[str, Any]], found)
    on_disk = disk_cache.read_entries(FILE)
    new: dict[str, Any] = {}
    for i, (t, k) in enumerate(zip(tools, kept, strict=True)):
        if found[i] is not None or k is None:
            continue
        key = disk_key(t)
        stored = on_disk.get(key) if key is not None else None
        if not (
            isinstance(stored, dict) and stored.get("name") == t.name and "parameters" in stored
        ):
            stored = _make(t)
            if key is not None:
                new[key] = stored
        found[i] = _kept.setdefault(k, stored)
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
    lazy = schema_on_first_use(tool)
    schema = lazy.key if lazy is not None else tool.args_schema
    # A JSON schema given as it is: LangChain's conversion costs nothing.
    return None if isinstance(schema, dict) else (tool.name, tool.description, schema)


def disk_key(tool: BaseTool) -> str | None:
    """A hash of all a tool's definition is made from; None unless of plain types."""
    import langchain_core
    import pydantic

    common = [VERSION, langchain_core.__version__, pydantic.VERSION, tool.name, tool.description]
    if (lazy := schema_on_first_use(tool)) is not None:
        source = lazy.source()
        return None if source is None else _hash([*common, "source", source])
    schema = tool.args_schema
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        return None
    if not all(_plain(f.annotation) for f in schema.model_fields.values()):
        return None
    fields = [(name, repr(field)) for name, field in schema.model_fields.items()]
    return _hash([*common, schema.__name__, schema.__doc__, fields])


def _hash(made_from: list[Any]) -> str:
    return hashlib.sha256(json.dumps(made_from, default=repr).encode()).hexdigest()


_PLAIN_TYPES = (str, int, float, bool, bytes, type(None), typing.Any)


def _plain(annotation: Any) -> bool:
    """Builtins and `typing` forms over them: types whose repr says all they are."""
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
