"""Command-line choices turned into one answer for a pending approval request: the graph
takes one decision per call, in request order, in a single answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gatehouse.graph import Approval, OutcomeUnknown, Pause
from gatehouse.graph.protocol.answers import (
    Decision,
    Edit,
    OutcomeAnswer,
    Reject,
    Respond,
    ReviewAnswer,
)
from gatehouse.graph.protocol.operations import review
from gatehouse.graph.protocol.wording import WILL_DO


class DecisionUsage(ValueError):
    """The options do not decide every pending call (or name a call that does not exist)."""


def describe_calls(pending: Approval, numbers: Iterable[int] | None = None) -> str:
    """`2 (write_file), 3 (run_command)` for these call numbers (all by default)."""
    actions = pending.actions
    wanted = list(numbers) if numbers is not None else range(1, len(actions) + 1)
    return ", ".join(f"{n} ({actions[n - 1].name})" for n in wanted)


def describe_answer(pending: Pause, answer: ReviewAnswer | OutcomeAnswer) -> list[str]:
    """One line per call saying what the answer does to it, for a person to confirm."""
    if isinstance(answer, OutcomeAnswer):
        name = pending.call.name if isinstance(pending, OutcomeUnknown) else "the call"
        return [
            f"{name}: {WILL_DO.get(answer.type, answer.type)}"
            + (f": {answer.message}" if answer.message else "")
        ]
    lines = []
    actions = pending.actions if isinstance(pending, Approval) else []
    for n, (action, decision) in enumerate(zip(actions, answer.decisions, strict=False), 1):
        line = f"call {n} ({action.name}): {WILL_DO.get(decision.type, decision.type)}"
        if isinstance(decision, Edit):
            line += f" {decision.edited_action.args}"
        elif isinstance(decision, Reject | Respond) and decision.message:
            line += f": {decision.message}"
        if decision.always_allow:
            line += ", and always allow it in this thread"
        lines.append(line)
    return lines


def answer(
    pending: Approval,
    chosen: Mapping[int, Decision],
    others: Decision | None = None,
    *,
    hint: str = "decide them in the same command (repeat --call, use --all, "
    "--reject-others REASON or --approve-others)",
) -> ReviewAnswer:
    """The answer covering every call: `chosen` by 1-based number, the rest `others`;
    refused (`DecisionUsage`) when some call would stay undecided."""
    count = len(pending.actions)
    if bad := [n for n in chosen if not 1 <= n <= count]:
        raise DecisionUsage(
            f"no call {', '.join(map(str, bad))} in the pending request of thread "
            f"{pending.thread_id}; its calls are {describe_calls(pending)}"
        )
    undecided = [n for n in range(1, count + 1) if n not in chosen]
    if undecided and others is None:
        raise DecisionUsage(
            f"thread {pending.thread_id} has {count} pending calls and the graph takes one answer "
            f"for all of them; still undecided: {describe_calls(pending, undecided)}. Nothing was sent; "
            f"{hint}."
        )
    # An undecided call without `others` was refused above: nothing is left out.
    return review([d for n in range(1, count + 1) if (d := chosen.get(n, others)) is not None])
