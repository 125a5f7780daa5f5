"""Turning command-line choices into one answer for a pending approval request.

The graph takes exactly one decision per action request, in request order, in a
single answer. A command that decides only some calls (`approve ID --call 2`) must
therefore say what happens to the others (`--reject-others`, `--approve-others`),
or it is refused with the list of calls still undecided. Nothing is stored locally
between commands: a refused command changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from graph import Approval, OutcomeUnknown, Pause


class DecisionUsage(ValueError):
    """The options do not decide every pending call (or name a call that does not exist)."""


def approve(always: bool = False) -> dict[str, Any]:
    return {"type": "approve", "always_allow": True} if always else {"type": "approve"}


def reject(reason: str | None) -> dict[str, Any]:
    return {"type": "reject", "message": reason} if reason else {"type": "reject"}


def respond(message: str) -> dict[str, Any]:
    return {"type": "respond", "message": message}


# Answers to an "outcome unknown" pause (graph/journal.py: OutcomeAnswer).
def run_again() -> dict[str, Any]:
    return {"type": "run_again"}


def mark_failed(note: str | None = None) -> dict[str, Any]:
    return {"type": "mark_failed", "message": note} if note else {"type": "mark_failed"}


def outcome(text: str) -> dict[str, Any]:
    return {"type": "respond", "message": text}


def edit(name: str, args: dict[str, Any], always: bool = False) -> dict[str, Any]:
    decision: dict[str, Any] = {"type": "edit", "edited_action": {"name": name, "args": args}}
    if always:
        decision["always_allow"] = True
    return decision


def describe_calls(pending: Approval, numbers: Iterable[int] | None = None) -> str:
    """`2 (write_file), 3 (run_command)` for the given 1-based call numbers (all by default)."""
    actions = pending.actions
    wanted = list(numbers) if numbers is not None else range(1, len(actions) + 1)
    return ", ".join(f"{n} ({actions[n - 1].name})" for n in wanted)


_WORDS = {"approve": "approve", "edit": "run with edited arguments", "reject": "reject", "respond": "answer instead",
          "run_again": "run it again", "mark_failed": "mark it as failed"}


def describe_answer(pending: Pause, answer: Mapping[str, Any]) -> list[str]:
    """One line per call saying what the answer does to it, for a person to confirm."""
    if isinstance(pending, OutcomeUnknown):
        kind = str(answer.get("type"))
        return [f"{pending.call.name}: {_WORDS.get(kind, kind)}"
                + (f": {answer['message']}" if answer.get("message") else "")]
    lines = []
    for n, (action, decision) in enumerate(zip(pending.actions, answer.get("decisions", []), strict=False), 1):
        kind = str(decision.get("type"))
        line = f"call {n} ({action.name}): {_WORDS.get(kind, kind)}"
        if kind == "edit":
            line += f" {decision['edited_action']['args']}"
        elif decision.get("message"):
            line += f": {decision['message']}"
        if decision.get("always_allow"):
            line += ", and always allow it in this thread"
        lines.append(line)
    return lines


def check_numbers(pending: Approval, numbers: Iterable[int]) -> list[int]:
    count = len(pending.actions)
    chosen = list(dict.fromkeys(numbers))
    bad = [n for n in chosen if not 1 <= n <= count]
    if bad:
        raise DecisionUsage(
            f"no call {', '.join(map(str, bad))} in the pending request of thread "
            f"{pending.thread_id}; its calls are {describe_calls(pending)}"
        )
    return chosen


def answer(
    pending: Approval,
    chosen: Mapping[int, dict[str, Any]],
    others: dict[str, Any] | None = None,
    *,
    hint: str = "decide them in the same command (repeat --call, use --all, "
    "--reject-others REASON or --approve-others)",
) -> dict[str, Any]:
    """`{"decisions": [...]}` covering every call: `chosen` by 1-based number, the
    rest `others`; refused (`DecisionUsage`) when some call would stay undecided."""
    check_numbers(pending, chosen)
    count = len(pending.actions)
    undecided = [n for n in range(1, count + 1) if n not in chosen]
    if undecided and others is None:
        raise DecisionUsage(
            f"thread {pending.thread_id} has {count} pending calls and the graph takes one answer "
            f"for all of them; still undecided: {describe_calls(pending, undecided)}. Nothing was sent; "
            f"{hint}."
        )
    return {"decisions": [dict(chosen[n]) if n in chosen else dict(others or {}) for n in range(1, count + 1)]}
