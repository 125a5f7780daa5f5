"""Threads made through LangGraph Server, as Gatehouse's own front ends see them (issue 33).

langgraph-sdk against `langgraph dev` on a Gatehouse database: the thread index (what
the web sidebar, `gatehouse threads` and the inbox list) titles a server thread from its
first message at once, as it does for threads the web app or the terminal start.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gatehouse.graph.store import open_storage
from tests.support.langgraph_dev import GRAPH, DevServer, langgraph_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, Path]]:
    home = tmp_path_factory.mktemp("threads-dev")
    workspace = home / "workspace"
    workspace.mkdir()
    with langgraph_dev(home, db=home / "gatehouse.db", workspace=workspace) as server:
        yield server, home / "gatehouse.db"


def _index_row(db: Path, thread_id: str) -> Any:
    storage = open_storage(str(db))
    try:
        return storage.index.get(thread_id)
    finally:
        storage.close()


def test_server_threads_are_titled_from_their_first_message(dev: tuple[DevServer, Path]) -> None:
    server, db = dev
    client = server.client()
    # Agent Chat UI sends content blocks; the SDK's examples a plain string.
    blocks = client.threads.create()["thread_id"]
    client.runs.wait(
        blocks,
        GRAPH,
        input={
            "messages": [
                {"type": "human", "content": [{"type": "text", "text": "hello from agent chat ui"}]}
            ]
        },
    )
    plain = client.threads.create()["thread_id"]
    client.runs.wait(
        plain, GRAPH, input={"messages": [{"role": "user", "content": "write x.md: hi"}]}
    )
    row = _index_row(db, blocks)
    assert row is not None and row.title == "hello from agent chat ui" and row.status == "completed"
    row = _index_row(db, plain)
    assert row is not None and row.title == "write x.md: hi" and row.status == "awaiting_approval"
