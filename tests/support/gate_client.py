"""The three ways into a Gatehouse thread, behind one small interface, for tests that
run the same approval scenario through each and expect the same result:

- `session`: the Session (`graph.open_session`), what the web app and terminal use;
- `raw`: the compiled graph itself, `invoke(...)` and `Command(resume=...)`, as an
  embedder or a script drives it (no Session, no lease);
- `sdk`: langgraph-sdk against `langgraph dev` on the project's langgraph.json.

All three use the same database, so one reader checks what each did. Run as a module
it is a victim process for crash tests:

    python -m tests.support.gate_client session|raw DB WORKSPACE resume THREAD ANSWER_JSON
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langgraph.types import Command
from pydantic import ValidationError

from gatehouse.graph import DecisionError, Session, open_session
from gatehouse.graph.service.app import build_agent
from gatehouse.graph.service.config import Settings
from gatehouse.graph.store import open_storage

GRAPH = "gatehouse"


class Refused(Exception):
    """The client was told its answer was wrong (and nothing changed)."""


def settings_for(db: str, workspace: str) -> Settings:
    # The offline demo model, the real tool set (sandboxed run_command, workspace files).
    return Settings(db=db, workspace=workspace)


class SessionClient:
    name = "session"

    def __init__(self, db: str, workspace: str) -> None:
        self.session: Session = open_session(settings_for(db, workspace))

    def send(self, thread: str, text: str) -> None:
        self.session.send(thread, text).collect()

    def resume(self, thread: str, answer: Any) -> None:
        try:
            run = self.session.resume(thread, answer)
        except DecisionError as exc:
            raise Refused(str(exc)) from exc
        run.collect()

    def retry(self, thread: str) -> None:
        self.session.retry(thread).collect()

    def close(self) -> None:
        self.session.close()


class RawClient:
    name = "raw"

    def __init__(self, db: str, workspace: str) -> None:
        settings = settings_for(db, workspace)
        self.storage = open_storage(db)
        self.agent, _, _ = build_agent(
            settings,
            self.storage.checkpointer,
            journal=self.storage.journal,
            decisions=self.storage.decisions,
        )

    @staticmethod
    def config(thread: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread}}

    def send(self, thread: str, text: str) -> None:
        self.agent.invoke({"messages": [{"role": "user", "content": text}]}, self.config(thread))

    def resume(self, thread: str, answer: Any) -> None:
        try:
            self.agent.invoke(Command(resume=answer), self.config(thread))
        except ValidationError as exc:
            raise Refused(str(exc)) from exc

    def retry(self, thread: str) -> None:
        self.agent.invoke(None, self.config(thread))

    def close(self) -> None:
        self.storage.close()


class SdkClient:
    name = "sdk"

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        from langgraph_sdk import get_sync_client

        # `headers`: the server's credentials (DevServer.headers: the install secret).
        self.client = get_sync_client(url=url, headers=headers)

    def _wait(self, thread: str, **kwargs: Any) -> Any:
        result = self.client.runs.wait(thread, GRAPH, if_not_exists="create", **kwargs)
        if isinstance(result, dict) and "__error__" in result:
            raise Refused(str(result["__error__"]))
        return result

    def register(self, thread: str) -> None:
        """Make a thread another process started known to this server."""
        self.client.threads.create(thread_id=thread, graph_id=GRAPH, if_exists="do_nothing")

    def send(self, thread: str, text: str) -> None:
        self._wait(thread, input={"messages": [{"role": "user", "content": text}]})

    def resume(self, thread: str, answer: Any, **kwargs: Any) -> None:
        try:
            self._wait(thread, command={"resume": answer}, **kwargs)
        except Refused:
            raise
        except Exception as exc:  # the SDK raises the run's error as a plain Exception
            if "ValidationError" in str(exc) or "validation error" in str(exc):
                raise Refused(str(exc)) from exc
            raise

    def retry(self, thread: str) -> None:
        self.register(thread)
        self._wait(thread, input=None)

    def close(self) -> None:
        pass


def main(kind: str, db: str, workspace: str, command: str, thread: str, answer: str) -> int:
    client = SessionClient(db, workspace) if kind == "session" else RawClient(db, workspace)
    try:
        if command == "resume":
            client.resume(thread, json.loads(answer))
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
