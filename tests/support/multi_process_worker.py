"""An "app process" for the multi-process tests: one Session on a shared database,
driven by JSON commands on stdin, one JSON reply per line on stdout.

    python -m tests.support.multi_process_worker <db path or URL> <ledger folder>

Commands: {"op": "send", "thread": t, "text": s} · {"op": "resume", "thread": t,
"answer": {...}} · {"op": "pending"} · {"op": "threads"} · {"op": "messages",
"thread": t} · {"op": "quit"}. An optional "at" (a time.time() value) makes the
command wait until then, so several processes can race on the same thread.
Replies: {"ok": true, ...} or {"ok": false, "error": <exception type>, "message": ...}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from gatehouse.graph import ai, tool_call
from tests.support.core_fixtures import make_session


def _asked(messages: list[BaseMessage]) -> str:
    return next(str(m.content) for m in messages if isinstance(m, HumanMessage))


def _send_email_turn(messages: list[BaseMessage]) -> AIMessage:
    # Deterministic per thread (turn-indexed script): the body names the request.
    return ai(
        "Sending it.",
        tool_call("send_email", {"to": "ops@example.com", "body": _asked(messages)}, "e1"),
    )


SCRIPT: list[Any] = [_send_email_turn, "Email sent."]


def handle(session: Any, cmd: dict[str, Any]) -> dict[str, Any]:
    op = cmd["op"]
    if op in ("send", "resume"):
        run = (
            session.send(cmd["thread"], cmd["text"])
            if op == "send"
            else session.resume(cmd["thread"], cmd["answer"])
        )
        events = [e.to_dict() for e in run.collect()]
        return {"ok": True, "events": events, "status": events[-1].get("status")}
    if op == "pending":
        return {
            "ok": True,
            "threads": [t.thread_id for t in session.thread_list().awaiting_approval],
        }
    if op == "threads":
        return {"ok": True, "threads": [t.to_dict() for t in session.thread_list().threads]}
    if op == "messages":
        return {
            "ok": True,
            "messages": [str(m.content) for m in session.view(cmd["thread"]).messages],
        }
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    db, folder = sys.argv[1], Path(sys.argv[2])
    session, _, _ = make_session(folder, SCRIPT, db=db)
    print(json.dumps({"ok": True, "ready": True}), flush=True)
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                break
            if "at" in cmd:
                time.sleep(max(0.0, cmd["at"] - time.time()))
            try:
                reply = handle(session, cmd)
            except Exception as exc:  # the test reads why a command was refused
                reply = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
            print(json.dumps(reply), flush=True)
    finally:
        session.close()


if __name__ == "__main__":
    main()
