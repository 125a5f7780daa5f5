"""The approval card: every gated call of a paused turn, one decision each.

The card builds the `{"decisions": [...]}` answer of the HITL contract and hands it
to the Runner, which validates it (a bad answer changes nothing) before resuming.
Edited arguments are parsed and checked against the tool's schema here first, so a
typo is reported next to the field instead of as a refused resume.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from graph import Approval, DecisionError, OutcomeUnknown, Pause, RunInProgress, Runner, Session
from graph.protocol.pauses import ActionRequest
from ui.web.tool_blocks import pretty

LABELS = {"approve": "Approve", "edit": "Edit", "reject": "Reject", "respond": "Respond"}
OUTCOME_LABELS = {"run_again": "Run again", "mark_failed": "Mark as failed", "respond": "Respond with the real outcome"}
RISK_COLOR = {"read": "green", "write": "orange", "execute": "red", "network": "violet"}


class InvalidInput(ValueError):
    """What the person typed cannot become a decision."""


def _edited_args(session: Session, name: str, raw: str) -> dict[str, Any]:
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{name}: the edited arguments are not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(args, dict):
        raise InvalidInput(f"{name}: the edited arguments must be a JSON object")
    if problem := session.check_args(name, args):
        raise InvalidInput(f"{name}: {problem}")
    return args


def _decision(session: Session, key: str, action: ActionRequest, choice: str) -> dict[str, Any]:
    name = action.name
    always = bool(st.session_state.get(f"{key}-always"))
    if choice == "approve":
        return {"type": "approve", **({"always_allow": True} if always else {})}
    if choice == "edit":
        args = _edited_args(session, name, st.session_state.get(f"{key}-args", pretty(action.args)))
        edit: dict[str, Any] = {"type": "edit", "edited_action": {"name": name, "args": args}}
        return {**edit, **({"always_allow": True} if always else {})}
    if choice == "reject":
        reason = str(st.session_state.get(f"{key}-reason", "")).strip()
        return {"type": "reject", "message": reason or "No reason given."}
    answer = str(st.session_state.get(f"{key}-respond", "")).strip()
    if not answer:
        raise InvalidInput(f"{name}: write the answer the model should get instead of running the tool")
    return {"type": "respond", "message": answer}


def _action(pending: Approval, index: int, action: ActionRequest, prefix: str) -> str:
    key = f"{prefix}-{pending.interrupt_id}-{index}"
    risk = action.risk or "?"
    with st.container(border=True):
        color = RISK_COLOR.get(risk, "gray")
        st.markdown(f"**{index + 1}. `{action.name}`** · :{color}-badge[risk: {risk}]")
        description = action.description.split("\n", 1)[0]
        if description:
            st.caption(description)
        st.code(pretty(action.args), language="json")
        preview = action.preview
        if preview:
            st.caption("preview")
            is_diff = preview.startswith(("---", "@@")) or "\n+++ " in preview
            st.code(preview, language="diff" if is_diff else "text")
        allowed = [d for d in pending.allowed(index) if d in LABELS]
        choice = st.radio(
            "Decision", allowed, format_func=LABELS.__getitem__, horizontal=True, key=f"{key}-choice"
        )
        if choice == "edit":
            st.text_area("Arguments (JSON)", value=pretty(action.args), key=f"{key}-args", height=160)
        elif choice == "reject":
            st.text_input("Reason (the model sees it)", key=f"{key}-reason")
        elif choice == "respond":
            st.text_area("Answer to give the model instead of running the tool", key=f"{key}-respond")
        if choice in ("approve", "edit"):
            st.checkbox(f"Always allow `{action.name}` in this thread", key=f"{key}-always")
    return str(choice)


def _outcome_answer(key: str, choice: str) -> dict[str, Any]:
    if choice == "run_again":
        return {"type": "run_again"}
    if choice == "mark_failed":
        note = str(st.session_state.get(f"{key}-note", "")).strip()
        return {"type": "mark_failed", **({"message": note} if note else {})}
    real = str(st.session_state.get(f"{key}-real", "")).strip()
    if not real:
        raise InvalidInput("write what really happened: the model gets it as the tool's result")
    return {"type": "respond", "message": real}


def outcome_card(session: Session, runner: Runner, pending: OutcomeUnknown, prefix: str = "card") -> bool:
    """The "outcome unknown" card: run again, mark as failed, or tell the model what
    really happened. True when an answer was submitted and the run resumed."""
    call = pending.call
    key = f"{prefix}-{pending.interrupt_id}-outcome"
    name = call.name
    with st.container(border=True):
        st.markdown(f"### :material/help: Outcome unknown · `{name}`")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(call.started_at))
        st.caption(f"started at {when}" + (f" · {call.attempts} attempts" if call.attempts > 1 else ""))
        if pending.request.description:
            st.markdown(pending.request.description)
        st.code(pretty(call.args), language="json")
        allowed = [c for c in pending.allowed if c in OUTCOME_LABELS]
        choice = st.radio(
            "What happened?", allowed, format_func=OUTCOME_LABELS.__getitem__, horizontal=True, key=f"{key}-choice"
        )
        if choice == "run_again":
            st.warning(
                f"Running `{name}` again may repeat its side effect if the first attempt did its work.",
                icon=":material/warning:",
            )
        elif choice == "mark_failed":
            st.text_input("Note for the model (optional)", key=f"{key}-note")
        elif choice == "respond":
            st.text_area("What really happened (the model gets this as the tool's result)", key=f"{key}-real")
        if not st.button("Submit", type="primary", key=f"{key}-submit"):
            return False
        return _submit(runner, pending.thread_id, lambda: _outcome_answer(key, str(choice)))


def _submit(runner: Runner, thread_id: str, make_answer: Callable[[], Any]) -> bool:
    """Resume with the answer; a refused or unreadable one is shown and nothing changes."""
    try:
        runner.resume(thread_id, make_answer())
    except InvalidInput as exc:
        st.error(str(exc))
        return False
    except (DecisionError, RunInProgress) as exc:
        st.error(f"Not submitted: {exc}")
        return False
    return True


def approval_card(session: Session, runner: Runner, pending: Pause, prefix: str = "card") -> bool:
    """Draw the card; True when a decision was submitted and the run resumed."""
    if isinstance(pending, OutcomeUnknown):
        return outcome_card(session, runner, pending, prefix)
    actions = pending.actions
    with st.container(border=True):
        st.markdown(f"### :material/front_hand: Approval needed · {len(actions)} call{'s' if len(actions) != 1 else ''}")
        choices = [_action(pending, i, a, prefix) for i, a in enumerate(actions)]
        left, right = st.columns(2)
        submit = left.button("Submit decision", type="primary", key=f"{prefix}-{pending.interrupt_id}-submit")
        approve_all = right.button("Approve all", key=f"{prefix}-{pending.interrupt_id}-all")
        if not (submit or approve_all):
            return False

        def answer() -> dict[str, Any]:
            if approve_all:
                return {"decisions": [{"type": "approve"} for _ in actions]}
            return {
                "decisions": [
                    _decision(session, f"{prefix}-{pending.interrupt_id}-{i}", a, c)
                    for i, (a, c) in enumerate(zip(actions, choices, strict=True))
                ]
            }

        return _submit(runner, pending.thread_id, answer)
