"""Agent Inbox's reading of a request, and its answer format read as a HITL answer.

Agent Inbox (`normalizeInterrupt`) reads a HITL request as ONE call: the first action's
name (the row's title), `arguments` (the edit form) and `description` (the row's
preview, 65 characters; the thread view shows it all as Markdown). So a description
starts with the tool and its key argument, and the first of a multi-call turn shows
every call in full. Its one `HumanResponse` (accept / edit / response / ignore) is
read for the calls as `from_inbox` says; anything else is refused, the pause kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gatehouse.graph.protocol.display import visible, visible_json

INBOX_TYPES = frozenset({"accept", "edit", "response", "ignore"})
IGNORED_NOTE = "The person ignored this request in Agent Inbox."


def is_inbox_answer(data: Any) -> bool:
    items = data if isinstance(data, list) else [data]
    # "edit" is a type of both formats: the HITL one carries `edited_action`.
    return bool(items) and all(
        isinstance(i, Mapping) and i.get("type") in INBOX_TYPES and "edited_action" not in i
        for i in items
    )


def from_inbox(
    data: Any,
    actions: Sequence[Mapping[str, Any]],
    configs: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The HITL answer an Agent Inbox answer means for the pending `actions` (and their
    `configs`): accept approves all, an edit (one call only) runs it edited, a response
    is the result (or, where only `reject` is allowed, or for several calls, a
    rejection's reason), ignore rejects all. ValueError when it means none."""
    items = data if isinstance(data, list) else [data]
    names = ", ".join(str(a.get("name")) for a in actions)
    if len(items) != 1:
        raise ValueError(
            f"Agent Inbox's answer format takes one response for the request; got {len(items)} "
            f"({names}); the calls stay pending"
        )
    [item] = items
    first = actions[0]
    kind, args = item["type"], item.get("args")
    every = len(actions)
    if kind == "accept":
        # Agent Inbox echoes the first action request with an accept: an echo of another
        # call is not a yes to the calls as shown (`{}` is an older Agent Inbox's echo).
        echoed = args.get("args") if isinstance(args, Mapping) else None
        if isinstance(args, Mapping) and (
            args.get("action", first["name"]) != first["name"]
            or (echoed and echoed != first["args"])
        ):
            raise ValueError(
                "an 'accept' must carry the pending call unchanged; to change its arguments send an 'edit'; "
                "the call stays pending"
            )
        return {"decisions": [{"type": "approve"}] * every}
    if kind == "edit":
        if every != 1:
            raise ValueError(
                f"this turn asks about {every} calls ({names}) and Agent Inbox's edit form holds only the "
                "first: an edit cannot say what happens to the others. Accept or reject them all here, or "
                "edit one call in the web app, the terminal (`gatehouse resume`) or Agent Chat UI; "
                "the calls stay pending"
            )
        if not isinstance(args, Mapping) or not isinstance(args.get("args"), Mapping):
            raise ValueError(
                'an \'edit\' needs args: {"action": <tool name>, "args": {...}}; the call stays pending'
            )
        edited = {"name": args.get("action", first["name"]), "args": dict(args["args"])}
        return {"decisions": [{"type": "edit", "edited_action": edited}]}
    if kind == "response":
        if not isinstance(args, str):
            raise ValueError(
                "a 'response' needs its text as args (a string); the call stays pending"
            )
        # Agent Inbox offers "respond" where a request allows `reject`: the text is the
        # tool's result where `respond` is allowed for one call, else a rejection's reason.
        allowed = list((configs[0] if configs else {}).get("allowed_decisions") or ["respond"])
        if every != 1 or ("respond" not in allowed and "reject" in allowed):
            return {"decisions": [{"type": "reject", "message": args}] * every}
        return {"decisions": [{"type": "respond", "message": args}]}
    return {"decisions": [{"type": "reject", "message": IGNORED_NOTE}] * every}


# The argument a call is about, by name, in this order; else its first plain one.
KEY_ARGS = ("path", "command", "url", "query", "sql", "to", "service", "name")
HEADLINE_CHARS = 48
_MARKDOWN = re.compile(r"([\\`*\[\]<>])")


def headline(name: str, args: Mapping[str, Any]) -> str:
    """`write_file notes.md`: the tool and its key argument on one line (blanks as one
    space, cut with "…"), Markdown-inert."""
    key = next((k for k in KEY_ARGS if isinstance(args.get(k), str)), None) or next(
        (k for k, v in args.items() if isinstance(v, str | int | float)), None
    )
    if key is None:
        return name
    text = " ".join(visible(str(args[key])).split())
    if len(text) > HEADLINE_CHARS:
        text = text[: HEADLINE_CHARS - 1] + "…"
    return name + " " + _MARKDOWN.sub(r"\\\1", text)


def call_in_full(number: int, call: Mapping[str, Any]) -> str:
    """One call as Markdown, its arguments in a fence no argument can close."""
    body = visible_json(call["args"], indent=2)
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", body)), default=0))
    return (
        f"**{number}. {call['name']}** (call {call.get('id') or '?'})\n{fence}json\n{body}\n{fence}"
    )


def describe_turn(calls: Sequence[Mapping[str, Any]], leads: Sequence[Sequence[str]]) -> list[str]:
    """Each call's description: its headline, `leads` (what it may touch), the call in
    full; the first of several shows every call and what Agent Inbox's answers do."""
    out = []
    for i, call in enumerate(calls):
        head = headline(call["name"], call["args"])
        if i == 0 and len(calls) > 1:
            head += f" (call 1 of {len(calls)})"
        first, *rest = leads[i] or [""]
        parts = [" · ".join(p for p in (head, first) if p), *rest]
        if i == 0 and len(calls) > 1:
            parts.append(
                f"**This turn asks about {len(calls)} calls, all shown below.** In Agent Inbox: "
                f"Accept approves all {len(calls)}, Respond rejects all with your text as the reason, "
                "Mark as resolved rejects all; to decide them one by one use the web app, the "
                "terminal (`gatehouse resume`) or Agent Chat UI."
            )
            parts += [call_in_full(n, c) for n, c in enumerate(calls, 1)]
        else:
            parts.append(call_in_full(i + 1, call))
        out.append("\n\n".join(p for p in parts if p))
    return out
