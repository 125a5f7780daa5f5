"""Tools and builders shared by the core tests (also imported by subprocess workers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from gatehouse.graph import ScriptedModel, Session, build_graph
from gatehouse.graph.store import open_storage
from gatehouse.tools.base import gatehouse_tool


class Ledger:
    """Records every real execution of a tool in a file, so any process can count."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def record(self, name: str, args: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"name": name, "args": args}) + "\n")

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def count(self, name: str) -> int:
        return sum(1 for e in self.entries() if e["name"] == name)


class SendArgs(BaseModel):
    to: str = Field(description="recipient")
    body: str


def make_tools(ledger: Ledger) -> list[BaseTool]:
    @gatehouse_tool(risk="read")
    def lookup(key: str) -> str:
        """Look a key up (free)."""
        ledger.record("lookup", {"key": key})
        return f"value of {key}"

    @gatehouse_tool(risk="read")
    def clock() -> str:
        """Tell the time (free)."""
        ledger.record("clock", {})
        return "12:00"

    @gatehouse_tool(risk="write", match_arg="to")
    def send_email(to: str, body: str) -> str:
        """Send an email (gated)."""
        ledger.record("send_email", {"to": to, "body": body})
        return f"sent to {to}"

    @gatehouse_tool(risk="execute")
    def deploy(service: str) -> str:
        """Deploy a service (gated)."""
        ledger.record("deploy", {"service": service})
        return f"deployed {service}"

    @gatehouse_tool(risk="read")
    def explode(reason: str) -> str:
        """A tool that always fails."""
        raise RuntimeError(f"boom: {reason}")

    return [lookup, clock, send_email, deploy, explode]


def make_session(
    tmp: Path, script: list[Any], *, db: str | None = None, **graph_kwargs: Any
) -> tuple[Session, Ledger, ScriptedModel]:
    """`db`: a SQLite path or a postgresql:// URL; default a SQLite file in `tmp`."""
    ledger = Ledger(tmp / "ledger.jsonl")
    tools = make_tools(ledger)
    model = ScriptedModel(script=script)
    storage = open_storage(db or str(tmp / "gatehouse.db"))
    # The journal and the decision log keep the approval guarantees in the graph itself.
    graph_kwargs = {"journal": storage.journal, "decisions": storage.decisions, **graph_kwargs}
    graph = build_graph(model=model, tools=tools, checkpointer=storage.checkpointer, **graph_kwargs)
    return Session(graph, storage, tools), ledger, model
