"""A format guardrail: an `after_llm` hook that sends a reply back until it is JSON.

    uv run python examples/hooks_after_llm.py

Offline: the scripted model first answers in prose; the hook rejects the reply
(`rerun_llm`) and tells the model why, the model answers again in JSON, and only that
reply is kept in the thread. The rejected text was already streamed, so the run's
events carry a `reply_rejected` event for front ends to drop it. Each re-ask is a
model call: the run's limits (`max_model_calls`, a Budget) bound the retries, and
after `max_rejections` the hook lets the reply stand.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from gatehouse.graph import ScriptedModel, Session, build_graph
from gatehouse.graph.store import open_storage

FEEDBACK = 'Answer with one JSON object only, like {"answer": "..."}, and nothing else.'


class JsonReply:
    """after_llm: a final reply must be a JSON object with an "answer" key."""

    name = "json_reply"

    def __init__(self, max_rejections: int = 2) -> None:
        self.max_rejections = max_rejections

    def __repr__(self) -> str:
        return "JsonReply()"

    def run(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        reply = state["messages"][-1]
        if (
            not isinstance(reply, AIMessage)
            or reply.tool_calls
            or is_json_answer(str(reply.content))
        ):
            return None
        rejected = (state.get("hook_run") or {}).get(self.name, {}).get("rejected", 0)
        if rejected >= self.max_rejections:
            return None  # the run's limits bound the retries; here the reply stands
        return {
            "rerun_llm": "the reply was not a JSON object with an 'answer'",
            "messages": [HumanMessage(FEEDBACK)],
            "hook_run": {self.name: {"rejected": rejected + 1}},
        }


def is_json_answer(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and "answer" in data


def model_reply(messages: list[BaseMessage]) -> str:
    """A model that answers in prose until it is told the format."""
    told = any(isinstance(m, HumanMessage) and m.content == FEEDBACK for m in messages)
    return '{"answer": "Paris"}' if told else "Sure! The capital of France is Paris."


def main(db_dir: str | None = None) -> list:
    storage = open_storage(str(Path(db_dir or tempfile.mkdtemp()) / "guardrail.db"))
    graph = build_graph(
        model=ScriptedModel(script=[model_reply]),
        tools=[],
        checkpointer=storage.checkpointer,
        hooks={"after_llm": [JsonReply()]},
    )
    session = Session(graph, storage, [])
    events = session.send(None, "What is the capital of France?").collect()
    for e in events:
        if e.type == "reply_rejected":
            print("reply_rejected:", e.reason)
    thread = events[0].thread_id
    print("history:", [m.content for m in session.view(thread).messages])
    print(events[-1].status, "-", session.view(thread).messages[-1].content)
    session.close()
    return events


if __name__ == "__main__":
    main()
