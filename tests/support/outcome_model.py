"""A scripted model for the outcome-unknown UI tests (test-only).

`gatehouse` and the web app load it through `GATEHOUSE_MODEL_FACTORY`
(`tests.support.outcome_model:model`): the first reply calls `run_command` (a
default tool that is not idempotent, so it is journaled), appending one line to
`hits.txt` in the workspace; every later reply is plain text.
"""

from __future__ import annotations

from gatehouse.graph import ScriptedModel, ai, tool_call

COMMAND = "echo hit >> hits.txt"


def model() -> ScriptedModel:
    return ScriptedModel(
        script=[ai("Running it.", tool_call("run_command", {"command": COMMAND}, "call0"))],
        fallback="Noted the outcome.",
    )
