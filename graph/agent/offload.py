"""Tool-result offloading: an output too large for the model's context is stored whole
(graph/store/outputs.py); the model gets its head and a reference, and reads on with
the free `read_tool_output` tool. `run_tool` stores it BEFORE the shortened result is
journaled, so a replayed result always finds its output."""

from __future__ import annotations

import functools
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, cast

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel, ConfigDict, Field, create_model

from gatehouse.graph.agent.emit import thread_of
from gatehouse.graph.protocol.threads import OFFLOAD_MARK
from gatehouse.graph.protocol.tools import ToolSpec, attach_spec

READ_TOOL = "read_tool_output"
# Without a store an output is cut here (what the model could get at most).
OUTPUT_CAP_CHARS = 50_000


class OutputStore(Protocol):
    """Where whole outputs are kept (graph/store/outputs.py)."""

    def put(self, thread_id: str, tool_call_id: str, tool: str, content: str) -> None: ...

    def get(self, thread_id: str, tool_call_id: str) -> str | None: ...


@dataclass(frozen=True)
class OffloadOptions:
    """When and how much ([offload] in gatehouse.toml). About 4 characters a token."""

    threshold_chars: int = 8_000  # longer outputs are stored aside; 0: off
    head_chars: int = 1_500  # how much of the output's start the model sees
    read_chars: int = 6_000  # at most this much per `read_tool_output` call
    max_stored_chars: int = 5_000_000  # a larger output is cut before it is stored

    @property
    def enabled(self) -> bool:
        return self.threshold_chars > 0


def fit_output(
    msg: ToolMessage,
    call: ToolCall,
    thread_id: str,
    store: OutputStore | None,
    options: OffloadOptions,
) -> ToolMessage:
    """The result the model gets: as it is, or its head and a reference (stored whole)."""
    text = msg.content
    if not isinstance(text, str):
        return msg
    if store is None or not options.enabled or call["name"] == READ_TOOL:
        msg.content = _cut(text, OUTPUT_CAP_CHARS, str(OUTPUT_CAP_CHARS))
        return msg
    if len(text) <= options.threshold_chars:
        return msg
    text = _cut(text, options.max_stored_chars, f"{options.max_stored_chars:,}")
    call_id = cast(str, call["id"])
    store.put(thread_id, call_id, call["name"], text)
    total_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    head = text[: options.head_chars]
    # End at a line break when one is near, so "read from line N" starts cleanly.
    if (cut := head.rfind("\n")) >= options.head_chars // 2:
        head = head[: cut + 1]
    sep = "" if head.endswith("\n") else "\n"
    msg.content = head + sep + reference(call_id, len(text), total_lines, head)
    msg.additional_kwargs[OFFLOAD_MARK] = {"total_chars": len(text), "total_lines": total_lines}
    return msg


def _cut(text: str, limit: int, shown: str) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n… (output cut at {shown} characters)"


def reference(call_id: str, total_chars: int, total_lines: int, head: str) -> str:
    """What the model reads instead of the rest of the output."""
    if head.endswith("\n"):
        shown_lines = head.count("\n")
        shown = f"the first {len(head):,} characters (lines 1-{shown_lines})"
        more = f"start_line={shown_lines + 1}"
    else:  # cut inside a (long) line: go on by characters
        shown = f"the first {len(head):,} characters"
        more = f"start_char={len(head)}"
    return (
        f"… [output stored aside: {total_chars:,} characters, {total_lines:,} lines; shown above: {shown}. "
        f'Read more with {READ_TOOL}(call_id="{call_id}", {more}), or find lines with '
        f'{READ_TOOL}(call_id="{call_id}", pattern="...").]'
    )


def offloaded(msg: Any) -> dict[str, int] | None:
    """The offload mark of a stored result: {"total_chars", "total_lines"}, or None."""
    mark = (getattr(msg, "additional_kwargs", None) or {}).get(OFFLOAD_MARK)
    return mark if isinstance(mark, dict) else None


_CallId = Annotated[str, Field(description="The call_id named in the stored output's reference")]
_StartLine = Annotated[int, Field(ge=1, description="First line to return (1-based)")]
_EndLine = Annotated[int | None, Field(ge=1, description="Last line to return (inclusive)")]
_Pattern = Annotated[
    str | None, Field(description="Return only lines matching this regular expression")
]
_StartChar = Annotated[
    int | None, Field(ge=0, description="Read by characters from this offset instead of by lines")
]


def make_read_tool(store: OutputStore, options: OffloadOptions) -> BaseTool:
    """`read_tool_output`: ranges or matching lines of an output stored aside."""

    def read_tool_output(
        call_id: _CallId,
        config: RunnableConfig,
        start_line: _StartLine = 1,
        end_line: _EndLine = None,
        pattern: _Pattern = None,
        start_char: _StartChar = None,
    ) -> str:
        """Read more of a tool output that was too large to show whole (its result says
        "output stored aside"): a range of lines, the lines matching a pattern, or
        characters from an offset (for outputs with very long lines)."""
        text = store.get(thread_of(config), call_id)
        if text is None:
            raise ValueError(
                f"no stored output for call {call_id!r} in this thread; stored outputs are named in "
                "results that say 'output stored aside'"
            )
        if start_char is not None:
            end = min(start_char + options.read_chars, len(text))
            more = f"; continue with start_char={end}" if end < len(text) else ""
            return f"characters {start_char}-{end} of {len(text):,}{more}:\n" + text[start_char:end]
        lines = text.splitlines()
        if pattern:
            return _matching(lines, pattern, start_line, end_line, options.read_chars)
        last = min(end_line or len(lines), len(lines))
        if start_line > len(lines):
            return f"(the output has {len(lines):,} lines; nothing from line {start_line})"
        out: list[str] = []
        used = 0
        n = start_line
        while n <= last:
            line = lines[n - 1]
            if used + len(line) + 1 > options.read_chars:
                if not out:  # one line longer than a whole read: its start, then by characters
                    offset = sum(len(x) + 1 for x in lines[: n - 1])
                    return (
                        f"line {n} alone has {len(line):,} characters; its first {options.read_chars:,} "
                        f"(continue with start_char={offset + options.read_chars}):\n"
                        + line[: options.read_chars]
                    )
                break
            out.append(line)
            used += len(line) + 1
            n += 1
        more = f"; continue with start_line={n}" if n <= last else ""
        return f"lines {start_line}-{n - 1} of {len(lines):,}{more}:\n" + "\n".join(out)

    schema = _read_args_schema(inspect.getdoc(read_tool_output) or "")
    built = tool(READ_TOOL, args_schema=schema)(read_tool_output)
    return attach_spec(built, ToolSpec(risk="read", default="allow", idempotent=True))


@functools.cache
def _read_args_schema(doc: str) -> type[BaseModel]:
    """The schema LangChain would infer, made once (inferring costs ms per session open)."""
    fields: dict[str, Any] = {
        "call_id": (_CallId, ...),
        "start_line": (_StartLine, 1),
        "end_line": (_EndLine, None),
        "pattern": (_Pattern, None),
        "start_char": (_StartChar, None),
    }
    model: type[BaseModel] = create_model(
        READ_TOOL, __config__=ConfigDict(arbitrary_types_allowed=True, defer_build=True), **fields
    )
    model.__annotations__ = {name: hint for name, (hint, _) in fields.items()}
    model.__doc__ = textwrap.dedent(doc)
    return model


def _matching(lines: list[str], pattern: str, start: int, end: int | None, budget: int) -> str:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad pattern {pattern!r}: {exc}") from None
    found: list[str] = []
    used = 0
    for n in range(start, min(end or len(lines), len(lines)) + 1):
        if regex.search(lines[n - 1]):
            row = f"{n}: {lines[n - 1]}"
            if used + len(row) + 1 > budget:
                found.append(f"… (more matches; continue with start_line={n})")
                break
            found.append(row)
            used += len(row) + 1
    if not found:
        return f"no line matches {pattern!r}"
    return f"lines matching {pattern!r} (line number: text):\n" + "\n".join(found)
