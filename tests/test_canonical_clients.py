"""Pattern grants match canonical paths on every way into a thread (issue 29, item 5):
the Session, the raw compiled graph with `Command`, and langgraph-sdk against
`langgraph dev`. The offline demo model writes the files; an "always allow" of
`n-<client>/*` covers later writes inside that folder and never
`n-<client>/../.git/hooks/…`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.gate_client import RawClient, SdkClient, SessionClient
from tests.support.langgraph_dev import langgraph_dev

CLIENTS = ["session", "raw", "sdk"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("canonical")
    db, workspace = home / "gatehouse.db", home / "workspace"
    (workspace / ".git" / "hooks").mkdir(parents=True)
    with langgraph_dev(home / "server", db=db, workspace=workspace) as server:
        clients = {
            "session": SessionClient(str(db), str(workspace)),
            "raw": RawClient(str(db), str(workspace)),
            "sdk": SdkClient(server.url, server.headers),
        }
        try:
            yield {"workspace": workspace, "clients": clients, "reader": clients["raw"]}
        finally:
            for client in clients.values():
                client.close()


def pending(world: dict[str, Any], thread: str) -> list[dict[str, Any]]:
    snapshot = world["reader"].agent.get_state({"configurable": {"thread_id": thread}})
    return [a for i in snapshot.interrupts for a in i.value["action_requests"]]


@pytest.mark.parametrize("via", CLIENTS)
def test_a_pattern_grant_never_covers_a_path_that_leaves_it(
    world: dict[str, Any], via: str
) -> None:
    client, thread, ws = world["clients"][via], str(uuid.uuid4()), world["workspace"]
    client.send(thread, f"write n-{via}/first.md: one")
    assert [a["name"] for a in pending(world, thread)] == ["write_file"]
    client.resume(thread, {"decisions": [{"type": "approve", "always_allow": f"n-{via}/*"}]})
    assert (ws / f"n-{via}" / "first.md").read_text() == "one\n"

    client.send(thread, f"write n-{via}/second.md: two")
    assert pending(world, thread) == [], "the grant covers a path inside its folder"
    assert (ws / f"n-{via}" / "second.md").read_text() == "two\n"

    hook = ws / ".git" / "hooks" / f"pre-commit-{via}"
    client.send(thread, f"write n-{via}/../.git/hooks/pre-commit-{via}: evil")
    [action] = pending(world, thread)
    assert action["args"]["path"] == f"n-{via}/../.git/hooks/pre-commit-{via}"
    assert not hook.exists(), "nothing ran before a person decided"
    client.resume(thread, {"decisions": [{"type": "reject", "message": "no"}]})
    assert not hook.exists() and pending(world, thread) == []
