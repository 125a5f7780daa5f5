"""Authority on LangGraph Server (issue 54, items 2-4 and 6): langgraph-sdk against
`langgraph dev` on the project's langgraph.json, with three users' keys: ana (an
approver of run_command), bob and the local user (neither). A thread is its
creator's; others cannot read, post in or decide it, unless a tool lists them (they
then decide that tool's calls only); a thread id that is someone else's or was a
deleted thread's is refused; "mark as resolved" and the "outcome unknown" answer are
decided by the server's authenticated user, checked by the same door as everything
else. One server for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import APIStatusError

from gatehouse.graph import Settings, open_session
from tests.support.langgraph_dev import GRAPH, DevServer, langgraph_dev

pytestmark = pytest.mark.slow

ANA, BOB = "ana@example.com", "bob@example.com"
ANA_KEY, BOB_KEY = "ana-key-0123456789abcdef", "bob-key-0123456789abcdef"
APPROVE = {"decisions": [{"type": "approve"}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    home = tmp_path_factory.mktemp("authority-server")
    workspace = home / "workspace"
    workspace.mkdir()
    config = home / "gatehouse.toml"
    config.write_text(f'[policy.run_command]\nmode = "ask"\napprovers = ["{ANA}"]\n')
    with langgraph_dev(
        home,
        db=home / "gatehouse.db",
        workspace=workspace,
        GATEHOUSE_CONFIG=str(config),
        GATEHOUSE_API_KEYS=f"{ANA}={ANA_KEY},{BOB}={BOB_KEY}",
    ) as dev:
        yield dev


def user(server: DevServer, key: str) -> Any:
    return get_sync_client(url=server.url, api_key=key)


def session_of(server: DevServer) -> Any:
    return open_session(
        Settings(db=str(server.home / "gatehouse.db"), workspace=str(server.home / "workspace"))
    )


def pause_of(client: Any, thread_id: str) -> list[Any]:
    return [i["value"] for i in client.threads.get_state(thread_id)["interrupts"]]


def tool_results(client: Any, thread_id: str) -> list[dict[str, Any]]:
    values = client.threads.get_state(thread_id)["values"] or {}
    return [m for m in values.get("messages", []) if m.get("type") == "tool"]


def run_status(client: Any, thread_id: str, **run: Any) -> str:
    """Start a run and wait for it: its final status ("error" for a refused answer)."""
    created = client.runs.create(thread_id, GRAPH, **run)
    client.runs.join(thread_id, created["run_id"])
    return str(client.runs.get(thread_id, created["run_id"])["status"])


def refused(call: Any, *args: Any, **kwargs: Any) -> int:
    with pytest.raises(APIStatusError) as caught:
        call(*args, **kwargs)
    return int(caught.value.status_code)


def bobs_paused_thread(server: DevServer, text: str) -> tuple[Any, str]:
    bob = user(server, BOB_KEY)
    tid = bob.threads.create()["thread_id"]
    bob.runs.wait(tid, GRAPH, input={"messages": [{"role": "user", "content": text}]})
    assert pause_of(bob, tid)
    return bob, tid


def test_a_thread_is_its_creators(server: DevServer) -> None:
    bob, tid = bobs_paused_thread(server, "write bob.md: mine")
    before = pause_of(bob, tid)
    local = server.client()  # signed in, neither the owner nor an approver
    assert refused(local.threads.get, tid) in (403, 404)
    assert refused(local.threads.get_state, tid) in (403, 404)
    assert tid not in [t["thread_id"] for t in local.threads.search(limit=100)]
    message = {"messages": [{"role": "user", "content": "write evil.md: x"}]}
    assert refused(local.runs.create, tid, GRAPH, input=message) in (403, 404)
    assert refused(local.runs.create, tid, GRAPH, command={"resume": APPROVE}) in (403, 404)
    assert refused(local.threads.update_state, tid, None, as_node="__end__") in (403, 404)
    assert refused(local.threads.create, thread_id=tid, if_exists="do_nothing") in (403, 409)
    assert refused(local.threads.delete, tid) in (403, 404)

    # ana decides run_command calls anywhere; she may read bob's thread, but not post in
    # it, nor decide his write_file call (no approvers: its owner decides).
    ana = user(server, ANA_KEY)
    assert ana.threads.get(tid)["thread_id"] == tid
    assert refused(ana.runs.create, tid, GRAPH, input=message) == 403
    assert run_status(ana, tid, command={"resume": APPROVE}) == "error"
    assert pause_of(bob, tid) == before
    with closing(session_of(server)) as session:
        assert not session.view(tid).audit()
    assert bob.runs.wait(tid, GRAPH, command={"resume": APPROVE})
    assert not pause_of(bob, tid)
    assert (server.home / "workspace" / "bob.md").read_text().strip() == "mine"


def test_a_deleted_threads_id_is_not_given_out_again(server: DevServer) -> None:
    ana = user(server, ANA_KEY)
    tid = ana.threads.create()["thread_id"]
    ana.runs.wait(tid, GRAPH, input={"messages": [{"role": "user", "content": "run: echo a"}]})
    ana.runs.wait(
        tid, GRAPH, command={"resume": {"decisions": [{"type": "approve", "always_allow": True}]}}
    )
    with closing(session_of(server)) as session:
        assert [g.label for g in session.view(tid).grants] == ["run_command"]
    ana.threads.delete(tid)
    for who in (ana, user(server, BOB_KEY)):
        assert refused(who.threads.create, thread_id=tid) == 403
        message = {"messages": [{"role": "user", "content": "run: echo again"}]}
        assert refused(who.runs.create, tid, GRAPH, input=message, if_not_exists="create") in (
            403,
            404,
        )
    with closing(session_of(server)) as session:
        assert session.view(tid).grants == []


def test_resolve_names_the_servers_user_never_the_clients_checkpoint(server: DevServer) -> None:
    bob, tid = bobs_paused_thread(server, "run: echo resolve")
    before = pause_of(bob, tid)
    forged = {"langgraph_auth_user_id": ANA, "gatehouse_actor": ANA}
    assert refused(bob.threads.update_state, tid, None, as_node="__end__", checkpoint=forged) == 403
    assert pause_of(bob, tid) == before
    with closing(session_of(server)) as session:
        assert not session.view(tid).audit()
    ana = user(server, ANA_KEY)
    ana.threads.update_state(tid, None, as_node="__end__")
    assert not pause_of(bob, tid)
    with closing(session_of(server)) as session:
        [record] = session.view(tid).audit()
    assert (record.decision, record.actor, record.source) == ("reject", ANA, "langgraph-server")
    # An approver may resolve, not write the thread's state otherwise.
    message = {"messages": [{"role": "user", "content": "injected"}]}
    assert refused(ana.threads.update_state, tid, message) == 403


def test_only_approvers_answer_the_outcome_unknown_question_on_the_server(
    server: DevServer,
) -> None:
    bob, tid = bobs_paused_thread(server, "run: echo once")
    [request] = pause_of(bob, tid)
    [action] = request["action_requests"]
    call = {"name": action["name"], "args": action["args"], "id": action["tool_call_id"]}
    with closing(session_of(server)) as session:
        session.storage.journal.start(tid, {**call, "type": "tool_call"})  # a crash mid-call
    ana = user(server, ANA_KEY)
    ana.runs.wait(tid, GRAPH, command={"resume": APPROVE})
    [asked] = pause_of(bob, tid)
    assert "outcome_unknown" in asked
    # bob owns the thread but is not among run_command's approvers.
    assert run_status(bob, tid, command={"resume": {"type": "run_again"}}) == "error"
    assert pause_of(bob, tid) == [asked]
    assert not tool_results(bob, tid)
    ana.runs.wait(tid, GRAPH, command={"resume": {"type": "run_again"}})
    assert not pause_of(bob, tid)
    [result] = tool_results(bob, tid)
    assert "once" in str(result["content"])
    with closing(session_of(server)) as session:
        [outcome] = [r for r in session.view(tid).audit() if r.question.startswith("outcome")]
    assert (outcome.decision, outcome.actor) == ("run_again", ANA)
