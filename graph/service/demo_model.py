"""The offline demo model, used with no API key or base URL so a new user sees the
whole flow at once: it reads plain requests ("write todo.md: buy milk") and calls the
matching tool; every reply says it is the demo.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import Field

from gatehouse.graph.agent.builtin_hooks.compaction import SUMMARY_REQUEST_MARK
from gatehouse.graph.agent.history import text_of
from gatehouse.graph.protocol.messages import call_outcome
from gatehouse.graph.protocol.threads import TOOL_STATUS_KEY
from gatehouse.graph.service.testing import LocalModel
from gatehouse.tools.definitions import tool_name

DEMO_LABEL = "Demo model (offline)"
RESULT_PREVIEW_CHARS = 1_500
SUMMARY_ASKS = 12  # requests quoted in a demo summary (the latest ones)
SUMMARY_QUOTE_CHARS = 80


@dataclass(frozen=True)
class Intent:
    """A plain request the demo understands: a regex and how to turn it into a call."""

    pattern: str
    tool: str
    example: str
    # The call's arguments; default: the pattern's named groups.
    args: Callable[[re.Match[str]], dict[str, Any]] = re.Match.groupdict


INTENTS: list[Intent] = [
    Intent(
        r"^(?:list|ls|show)(?: the)? files(?: in (?P<path>\S+))?$",
        "list_files",
        "list files",
        lambda m: {"path": m["path"] or "."},
    ),
    Intent(
        r"^(?:list|show) (?:all )?files (?:recursively|everywhere)(?: in (?P<path>\S+))?$|^list all files(?: in (?P<path2>\S+))?$",
        "list_files",
        "list all files",
        lambda m: {"path": m["path"] or m["path2"] or ".", "recursive": True},
    ),
    Intent(
        r"^(?:fetch|get|curl|open|browse) (?P<url>https?://\S+)$",
        "http_request",
        "fetch https://example.com",
    ),
    Intent(
        r"^(?P<method>post|put|patch|delete) (?P<url>https?://\S+)(?:\s*:\s*(?P<body>.*))?$",
        "http_request",
        'post https://example.com/api: {"a": 1}',
        lambda m: {"url": m["url"], "method": m["method"].upper(), "body": m["body"]},
    ),
    Intent(
        r"^(?:read|open|cat|show) (?P<path>\S+) lines? (?P<start>\d+)(?:\s*(?:-|to)\s*(?P<end>\d+))?$",
        "read_file",
        "read notes.md lines 1-5",
        lambda m: {
            "path": m["path"],
            "start_line": int(m["start"]),
            "end_line": int(m["end"] or m["start"]),
        },
    ),
    Intent(r"^(?:read|open|cat|show) (?!https?://)(?P<path>\S+)$", "read_file", "read notes.md"),
    Intent(
        r"^(?:write|create) (?P<path>[^:\s]+)\s*:\s*(?P<content>.*)$",
        "write_file",
        "write todo.md: buy milk",
        lambda m: {"path": m["path"], "content": m["content"].replace("\\n", "\n") + "\n"},
    ),
    Intent(
        r"^(?:search|grep|find)(?: for)? (?:/(?P<regex>.+)/|(?P<text>.+?))(?: in (?P<path>\S+))?$",
        "search_files",
        "search TODO",
        lambda m: {
            "pattern": m["regex"] or m["text"],
            "regex": bool(m["regex"]),
            "path": m["path"] or ".",
        },
    ),
    Intent(
        r"^edit (?P<path>[^:\s]+)\s*:\s*(?P<old_text>.+?)\s*->\s*(?P<new_text>.*)$",
        "edit_file",
        "edit notes.md: milk -> oat milk",
    ),
    Intent(
        r"^replace (?P<old>.+?) with (?P<new>.*) in (?P<path>\S+)$",
        "edit_file",
        "replace milk with oat milk in notes.md",
        lambda m: {"path": m["path"], "old_text": m["old"], "new_text": m["new"]},
    ),
    Intent(
        r"^(?:delete|remove|rm) (?P<folder>folder )?(?P<path>\S+)$",
        "delete_file",
        "delete old.txt",
        lambda m: {"path": m["path"], "recursive": bool(m["folder"])},
    ),
    Intent(
        r"^(?:move|rename|mv) (?P<source>\S+) (?:to |-> )?(?P<destination>\S+)$",
        "move_file",
        "move notes.md to archive/notes.md",
    ),
    Intent(r"^(?:run|shell|\$)\s*:?\s*(?P<command>.+)$", "run_command", "run: ls"),
    Intent(
        r"^(?:sql|query|db)\s*:\s*(?P<query>.+)$",
        "sql_query",
        "sql: select name from sqlite_schema",
    ),
]


class DemoModel(LocalModel):
    tool_names: list[str] = Field(default_factory=list)
    chunk_chars: int = 6

    @property
    def _llm_type(self) -> str:
        return "gatehouse-demo"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> DemoModel:
        return self.model_copy(update={"tool_names": [tool_name(t) for t in tools]})

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        if last is not None and last.additional_kwargs.get(SUMMARY_REQUEST_MARK):
            return AIMessage(content=self._summary(text_of(last.content)))
        if isinstance(last, ToolMessage):
            return AIMessage(content=self._summarise(messages))
        if isinstance(last, HumanMessage) and (calls := self._calls(text_of(last.content).strip())):
            names = ", ".join(c["name"] for c in calls)
            return AIMessage(content=f"[{DEMO_LABEL}] Calling {names}.", tool_calls=calls)
        return AIMessage(content=self._help())

    def _calls(self, text: str) -> list[dict[str, Any]]:
        # Split on " then " only when every part is a request; otherwise the whole
        # text is one request (so SQL with THEN or `run: a; b` stays one call).
        parts = [p.strip() for p in re.split(r"\s+(?:and then|then)\s+", text) if p.strip()]
        split = [self._match(p) for p in parts]
        if len(parts) > 1 and all(split):
            return [c for c in split if c is not None]
        whole = self._match(text)
        return [whole] if whole is not None else [c for c in split if c is not None]

    def _match(self, request: str) -> dict[str, Any] | None:
        for intent in INTENTS:
            if intent.tool not in self.tool_names:
                continue
            if m := re.match(intent.pattern, request, flags=re.IGNORECASE | re.DOTALL):
                return {
                    "name": intent.tool,
                    "args": intent.args(m),
                    "id": f"call_{uuid.uuid4().hex[:20]}",
                    "type": "tool_call",
                }
        return None

    def _summarise(self, messages: list[BaseMessage]) -> str:
        last = takewhile(lambda m: isinstance(m, ToolMessage), reversed(messages))
        results = cast(list[ToolMessage], list(last))
        parts = [f"[{DEMO_LABEL}] Here is what happened:"]
        for r in reversed(results):
            output = text = text_of(r.content)
            if len(text) > RESULT_PREVIEW_CHARS:
                text = text[:RESULT_PREVIEW_CHARS] + " …"
            # A person's answer in place of the call: nothing ran, so no tick.
            responded = r.additional_kwargs.get(TOOL_STATUS_KEY) == "responded"
            failed = r.status == "error" or call_outcome(r.name, "ok", output) == "error"
            mark = "✗" if failed else "↩" if responded else "✓"
            parts.append(f"\n{mark} {r.name}:\n{text}")
        return "\n".join(parts)

    def _summary(self, transcript: str) -> str:
        """For compaction: what was asked and which tools ran, listed from the transcript."""
        asked: list[str] = []
        calls: Counter[str] = Counter()
        earlier = ""
        for line in transcript.splitlines():
            if line.startswith("[user] "):
                text = " ".join(line[7:].split())
                asked.append(
                    text
                    if len(text) <= SUMMARY_QUOTE_CHARS
                    else text[: SUMMARY_QUOTE_CHARS - 1] + "…"
                )
            elif m := re.match(r"\[assistant called ([^\]]+)\]", line):
                calls[m[1]] += 1
            elif line.startswith("[earlier summary] "):
                earlier = line.removeprefix("[earlier summary] ")
        parts = [
            f"[{DEMO_LABEL}] A plain summary (the demo lists what happened; a real model would summarise)."
        ]
        if earlier:
            parts.append("Before that: " + earlier[:300] + ("…" if len(earlier) > 300 else ""))
        if asked:
            shown = asked[-SUMMARY_ASKS:]
            skipped = f" (and {len(asked) - len(shown)} earlier)" if len(asked) > len(shown) else ""
            parts.append(f"The person asked{skipped}: " + "; ".join(f'"{a}"' for a in shown) + ".")
        if calls:
            listed = ", ".join(f"{name} ×{n}" for name, n in calls.most_common())
            parts.append(f"Tools called: {listed}.")
        return "\n".join(parts)

    def _help(self) -> str:
        examples = [f"- `{i.example}`" for i in INTENTS if i.tool in self.tool_names]
        return (
            f"[{DEMO_LABEL}] I am the offline demo model: set OPENAI_API_KEY or OPENAI_BASE_URL "
            "to talk to a real model. I understand requests like:\n"
            + "\n".join(examples)
            + "\n\nCombine them with `then`."
        )
