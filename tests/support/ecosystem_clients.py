"""Agent Chat UI and Agent Inbox as Gatehouse's server sees them: their exact requests.

Their sources are not vendored (and langchain-ai/agent-inbox is on GitHub only, which
the test machines cannot reach), so these drivers send what each UI sends, read what
each UI reads, from a browser origin, with the key where each UI puts it. Read from:

- Agent Chat UI (langchain-ai/agent-chat-ui): `src/providers/Stream.tsx`
  (`checkGraphStatus`: `GET /info` with `X-Api-Key`, its connection check),
  `src/components/thread/index.tsx` (a message: `submit({messages}, {streamMode:
  ["values"], streamSubgraphs, streamResumable})`), `agent-inbox/hooks/
  use-interrupted-actions.tsx` (`submit({}, {command: {resume: {decisions}}})`).
- Agent Inbox (langchain-ai/agent-inbox): `src/lib/client.ts` (`X-Api-Key`),
  `contexts/ThreadContext.tsx` (`threads.search`, `sendHumanResponse`: `command:
  {resume: [response]}`, `streamMode: "events"`), `contexts/utils.ts`
  (`normalizeInterrupt`: the one call it shows), `components/interrupted-inbox-item.tsx`
  (a row: the action as title, `description[:65]`, `thread.updated_at`).

docs/ecosystem-clients.md says what each can and cannot do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

GRAPH = "gatehouse"
ROW_PREVIEW_CHARS = 65  # interrupted-inbox-item.tsx: description?.slice(0, 65)


@dataclass
class BrowserClient:
    """A UI served from `origin`, talking to `url` with `key` as its X-Api-Key."""

    url: str
    key: str | None
    origin: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Origin": self.origin, **({"X-Api-Key": self.key} if self.key else {})}

    def sdk(self) -> Any:
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.url, api_key=None, headers=self.headers)

    def preflight(self, path: str, method: str = "POST") -> httpx.Response:
        """What the browser asks before a request with the key header."""
        return httpx.options(
            f"{self.url}{path}",
            headers={
                "Origin": self.origin,
                "Access-Control-Request-Method": method,
                "Access-Control-Request-Headers": "content-type,x-api-key",
            },
        )


class AgentChatUI(BrowserClient):
    def connection_ok(self) -> bool:
        """`checkGraphStatus`: false shows "Failed to connect to LangGraph server"."""
        return httpx.get(f"{self.url}/info", headers=self.headers).is_success

    def send(self, thread_id: str, text: str) -> list[Any]:
        return list(
            self.sdk().runs.stream(
                thread_id,
                GRAPH,
                input={
                    "messages": [{"type": "human", "content": [{"type": "text", "text": text}]}]
                },
                stream_mode=["values"],
                stream_subgraphs=True,
                stream_resumable=True,
            )
        )

    def decide(self, thread_id: str, decisions: list[dict[str, Any]]) -> list[Any]:
        return list(
            self.sdk().runs.stream(
                thread_id, GRAPH, input={}, command={"resume": {"decisions": decisions}}
            )
        )


@dataclass
class InboxRow:
    thread_id: str
    title: str  # the action's name
    preview: str  # the first 65 characters of the description
    updated_at: str
    interrupt: dict[str, Any]  # normalizeInterrupt's HumanInterrupt


def normalize_interrupt(raw: Any) -> dict[str, Any] | None:
    """contexts/utils.ts `normalizeInterrupt`: a HITL request read as its first call."""
    if not isinstance(raw, dict) or not raw.get("action_requests"):
        return None
    req = raw["action_requests"][0]
    configs = raw.get("review_configs") or [{}]
    decisions = configs[0].get("allowed_decisions") or []
    return {
        "action_request": {"action": req.get("name") or "", "args": req.get("arguments") or {}},
        "config": {
            "allow_accept": "approve" in decisions,
            "allow_edit": "edit" in decisions,
            "allow_respond": "reject" in decisions,
            "allow_ignore": False,
        },
        "description": req.get("description"),
    }


class AgentInbox(BrowserClient):
    def rows(self) -> Iterator[InboxRow]:
        """The "interrupted" inbox: `threads.search` and the first interrupt of each."""
        threads = self.sdk().threads.search(
            status="interrupted", metadata={"graph_id": GRAPH}, limit=10, offset=0
        )
        for thread in threads:
            for pending in (thread.get("interrupts") or {}).values():
                shown = normalize_interrupt(pending[0]["value"])
                if shown is None:
                    continue
                yield InboxRow(
                    thread_id=str(thread["thread_id"]),
                    title=shown["action_request"]["action"],
                    preview=(shown["description"] or "")[:ROW_PREVIEW_CHARS],
                    updated_at=str(thread["updated_at"]),
                    interrupt=shown,
                )

    def respond(self, thread_id: str, response: dict[str, Any]) -> list[Any]:
        """`sendHumanResponse(threadId, [response], {stream: true})`."""
        return list(
            self.sdk().runs.stream(
                thread_id, GRAPH, command={"resume": [response]}, stream_mode="events"
            )
        )

    def accept(self, row: InboxRow) -> list[Any]:
        """The Accept button: the action request it shows, echoed."""
        return self.respond(
            row.thread_id, {"type": "accept", "args": row.interrupt["action_request"]}
        )

    def mark_resolved(self, thread_id: str) -> None:
        """ "Mark as resolved" (and its Ignore for threads it cannot read)."""
        self.sdk().threads.update_state(thread_id, None, as_node="__end__")
