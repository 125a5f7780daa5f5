"""A separate OS process that starts or resumes a thread (tests/test_cross_process.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gatehouse.graph import ai, tool_call
from tests.support.core_fixtures import make_session

SCRIPT = [
    ai(
        "Sending it.",
        tool_call("send_email", {"to": "ops@example.com", "body": "deploy done"}, "e1"),
    ),
    "Email sent.",
]


def main() -> None:
    action, folder, thread_id = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    session, _, _ = make_session(folder, SCRIPT)
    if action == "start":
        events = session.send(thread_id, "email ops").collect()
    else:
        events = session.resume(thread_id, json.loads(sys.argv[4])).collect()
    print(json.dumps([e.to_dict() for e in events]))
    session.close()


if __name__ == "__main__":
    main()
