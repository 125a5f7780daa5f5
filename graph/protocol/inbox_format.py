"""Agent Inbox's older answer format, read as a HITL answer.

Agent Inbox (langchain-ai/agent-inbox) resumes a pause with a list holding one
`HumanResponse` (`ThreadContext.sendHumanResponse`: `command: {resume: [input]}`):

    {"type": "accept", "args": <the action request, unchanged>}
    {"type": "edit", "args": {"action": "write_file", "args": {...}}}
    {"type": "response", "args": "the person's text"}
    {"type": "ignore", "args": null}

(Its reading of a HITL request: `action_requests[0]` with the arguments taken from
`arguments`, so they show as `{}`; "respond" offered where `reject` is allowed.)

One such answer speaks for one call, so it is read only where that is unambiguous:
the pause asks about exactly one call and the list holds exactly one answer. `ignore`
is a rejection with a note (the call does not run). Anything else in this format is
refused with the reason, and the pause stays as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

INBOX_TYPES = frozenset({"accept", "edit", "response", "ignore"})
IGNORED_NOTE = "The person ignored this request in Agent Inbox."


def is_inbox_answer(data: Any) -> bool:
    """Whether `data` is in Agent Inbox's format: a HumanResponse or a list of them."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(_is_inbox_item(i) for i in items)


def _is_inbox_item(item: Any) -> bool:
    # "edit" is a type of both formats: the HITL one carries `edited_action`.
    return (
        isinstance(item, Mapping)
        and item.get("type") in INBOX_TYPES
        and "edited_action" not in item
    )


def from_inbox(
    data: Any,
    actions: Sequence[Mapping[str, Any]],
    configs: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The `{"decisions": [...]}` answer an Agent Inbox answer means for the pending
    `actions` (the request's action_requests; `configs` its review_configs). Raises
    ValueError when it is ambiguous."""
    items = data if isinstance(data, list) else [data]
    names = ", ".join(str(a.get("name")) for a in actions)
    if len(actions) != 1:
        raise ValueError(
            f"this is Agent Inbox's one-call answer format ({{'type': 'accept' | 'edit' | 'response' | "
            f"'ignore'}}), but this pause asks about {len(actions)} calls ({names}): it cannot say which "
            'call it answers. Answer with {"decisions": [...]}, one decision per call in order '
            "(or keyed by tool call id), e.g. from Agent Chat UI, the web app or `gatehouse resume`; "
            "the calls stay pending"
        )
    if len(items) != 1:
        raise ValueError(
            f"Agent Inbox's answer format takes one response per call; got {len(items)} for one call "
            f"({names}); the call stays pending"
        )
    [item] = items
    [action] = actions
    kind, args = item["type"], item.get("args")
    if kind == "accept":
        # Agent Inbox echoes the action request with an accept. It reads a HITL request's
        # arguments from `arguments` (HITL names them `args`), so its echo carries `{}`:
        # the call as shown (the description lists the arguments). An echo with other
        # arguments or another tool is not a yes to the call as shown.
        echoed = args.get("args") if isinstance(args, Mapping) else None
        if isinstance(args, Mapping) and (
            args.get("action", action["name"]) != action["name"]
            or (echoed and echoed != action["args"])
        ):
            raise ValueError(
                "an 'accept' must carry the pending call unchanged; to change its arguments send an 'edit'; "
                "the call stays pending"
            )
        return {"decisions": [{"type": "approve"}]}
    if kind == "edit":
        if not isinstance(args, Mapping) or not isinstance(args.get("args"), Mapping):
            raise ValueError(
                'an \'edit\' needs args: {"action": <tool name>, "args": {...}}; the call stays pending'
            )
        return {
            "decisions": [
                {
                    "type": "edit",
                    "edited_action": {
                        "name": args.get("action", action["name"]),
                        "args": dict(args["args"]),
                    },
                }
            ]
        }
    if kind == "response":
        if not isinstance(args, str):
            raise ValueError(
                "a 'response' needs its text as args (a string); the call stays pending"
            )
        # Agent Inbox offers "respond" where a HITL request allows `reject` (its reading of
        # the format): the text is the tool's result where `respond` is allowed, else the
        # reason of a rejection.
        allowed = list((configs[0] if configs else {}).get("allowed_decisions") or ["respond"])
        if "respond" not in allowed and "reject" in allowed:
            return {"decisions": [{"type": "reject", "message": args}]}
        return {"decisions": [{"type": "respond", "message": args}]}
    return {"decisions": [{"type": "reject", "message": IGNORED_NOTE}]}
