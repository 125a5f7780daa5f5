"""Standing permissions made visible: a call the policy would gate that runs because an
"always allow" grant of the thread covers it gets the same trail as one a person
approved. Its decision-log entry (question "standing", decision "always_allowed",
naming the grant) is written before the call runs, and its result and `tool_started`
event name the grant, so every front end can show why nobody was asked.

Called from `run_tool` (graph/agent/tool_node.py) for a call the policy allows; the
grant is read again from the decision log there, never taken from the task (a
client's forged `Send` cannot put a grant on a call's record).
"""

from __future__ import annotations

import time

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig

from graph.agent.deps import AgentDeps
from graph.agent.emit import decided_by, thread_of
from graph.agent.policy import GRANTED, Grant, canonical_args
from graph.agent.routing import grants_of
from graph.protocol.decisions import ALWAYS_ALLOWED, STANDING_QUESTION, DecisionRecord, grant_label
from graph.protocol.tools import spec_of


def covering_grant(call: ToolCall, deps: AgentDeps, grants: list[Grant]) -> Grant | None:
    """The grant that lets `call` run without asking, when that is why the policy allows it."""
    tool = deps.tools.get(call["name"])
    if tool is None or deps.policy.evaluate(call["name"], call["args"], tool, grants).reason != GRANTED:
        return None
    spec = spec_of(tool)
    # The same canonical forms the policy matched (a path with `..` resolved).
    canon = canonical_args(spec, call["args"])
    return next((g for g in grants if g.covers(call["name"], call["args"], spec.match_arg, canon)), None)


def record_grant_run(call: ToolCall, config: RunnableConfig, deps: AgentDeps) -> str | None:
    """When a standing grant is why `call` runs: log it (once per call) and return the
    grant's label ("write_file:*.md"); None otherwise or without a decision log."""
    if deps.decisions is None:
        return None
    thread_id = thread_of(config)
    grant = covering_grant(call, deps, grants_of({}, deps, thread_id))
    if grant is None:
        return None
    if any(r.question == "review" and r.runs for r in deps.decisions.for_call(thread_id, call["id"])):
        return None  # a person approved this very call (the grant came with that approval)
    label = grant_label(grant.tool, grant.pattern)
    # The grant's own record says who gave it; this one, which run it let through.
    deps.decisions.record([DecisionRecord(
        thread_id=thread_id, question=STANDING_QUESTION, tool_call_id=call["id"], tool=call["name"],
        decision=ALWAYS_ALLOWED, args=call["args"],
        message=f"ran without asking: always allowed in this thread by the grant {label}",
        decided_at=time.time(), **decided_by(config),
    )])
    return label
