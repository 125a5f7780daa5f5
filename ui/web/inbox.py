"""The approvals inbox: every thread waiting for a decision, oldest first, for triage.

One compact row per thread (thread, tool, its key argument, waiting since) with
Approve / Reject in place: a decision resumes that thread in the background and the
page stays here, with the next row first. The first row answers to the keyboard
(a = approve, d = reject, n = next: decide it later, o = open). "Review" opens the
full card (edit, respond, per-call choices) in place.

Each row shows the risk of what it would run (the approval request's `risk`, the
highest of its calls). A call that executes or deletes is never approved by one key
or one click: Approve (or `a`) asks "Approve … ?" first, and only that answer runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from graph import Approval, OutcomeUnknown, Pause, Runner, Session, ThreadInfo
from graph.protocol import operations as op
from graph.protocol.answers import ReviewAnswer
from ui.web.approval import RISK_COLOR, approval_card, show_notice
from ui.web.approval import submit as submit_answer
from ui.web.safe_text import label
from ui.web.threads import ago, open_thread

KEY_ARGS = ("path", "command", "url", "source", "query", "sql", "name")
# Lowest to highest; a call without a declared risk counts as the highest (as tools'
# UNKNOWN_SPEC does: an unknown tool may execute anything).
RISK_ORDER = ("read", "network", "write", "delete", "execute")
# Never approved by a single key or click: the row asks to confirm first.
CONFIRM_RISKS = frozenset({"delete", "execute"})


def risk_of(pending: Approval) -> str:
    """The highest risk among the calls a row would approve."""
    risks = [a.risk if a.risk in RISK_ORDER else "execute" for a in pending.actions]
    return max(risks, key=RISK_ORDER.index, default="execute")


def key_argument(args: dict[str, Any]) -> str:
    """The argument that says what a call touches, short."""
    name = next((k for k in KEY_ARGS if k in args), next(iter(args), None))
    if name is None:
        return ""
    value = str(args[name]).replace("\n", " ")
    return label(value if len(value) <= 60 else value[:57] + "…")


def _what(pending: Pause) -> str:
    if isinstance(pending, OutcomeUnknown):
        call = pending.call
        return f"`{call.name}` {key_argument(call.args)} · :red-badge[outcome unknown]"
    assert isinstance(pending, Approval)
    first = pending.actions[0]
    more = f" · +{len(pending.actions) - 1} more" if len(pending.actions) > 1 else ""
    risk = risk_of(pending)
    return f"`{first.name}` {key_argument(first.args)}{more} · :{RISK_COLOR.get(risk, 'gray')}-badge[risk: {risk}]"


def _quick(kind: str, pending: Approval) -> Callable[[], ReviewAnswer]:
    if kind == "approve":
        return lambda: op.review([op.approve() for _ in pending.actions])
    return lambda: op.review(
        [op.reject("Rejected from the approvals inbox.") for _ in pending.actions]
    )


PAGE = 50  # inbox rows drawn at once


def inbox_page(session: Session, runner: Runner) -> None:
    st.header(":material/inbox: Approvals inbox")
    waiting = session.awaiting_approval()
    show_notice("notice-inbox")
    if not waiting:
        st.success("Nothing is waiting for a decision.")
        return
    st.caption(
        f"{len(waiting)} thread{'s' if len(waiting) != 1 else ''} waiting, oldest first. "
        "Keys for the first row: a approve (asks first when a call executes or deletes) · d reject · "
        "n next · o open."
    )
    first = True
    # The first page only, its cards read in one query: 10,000 waiting threads draw
    # as fast as 10 (issue 58); the rest come up as these are decided.
    page = _in_turn(waiting)[:PAGE]
    if len(waiting) > PAGE:
        st.caption(f"Showing the first {PAGE} of {len(waiting)}.")
    pauses = session.pending_many([info.thread_id for info in page])
    for info in page:
        pending = pauses.get(info.thread_id)
        if pending is None:
            continue  # decided elsewhere a moment ago
        _row(session, runner, info, pending, first=first)
        first = False


LATER = "inbox-later"  # threads put off with "Next", in that order (this browser session)


def _in_turn(waiting: list[ThreadInfo]) -> list[ThreadInfo]:
    """Oldest first, except what the person put off: after the rest, in the order put off."""
    later = [t for t in st.session_state.get(LATER, []) if any(w.thread_id == t for w in waiting)]
    rank = {t: i for i, t in enumerate(later)}
    return sorted(waiting, key=lambda w: (w.thread_id in rank, rank.get(w.thread_id, 0)))


def _put_off(thread_id: str) -> None:
    st.session_state[LATER] = [
        *(t for t in st.session_state.get(LATER, []) if t != thread_id),
        thread_id,
    ]


def _row(
    session: Session, runner: Runner, info: ThreadInfo, pending: Pause, *, first: bool
) -> None:
    tid = info.thread_id
    with st.container(border=True, key=f"inbox-row-{tid}"):
        text, approve, reject, later, opener = st.columns(
            [4.4, 1.5, 1.3, 1.2, 1.3], vertical_alignment="center"
        )
        since = ago(info.pending_since or info.updated_at)
        text.markdown(f"**{label(info.title)}** · {_what(pending)} · :gray[waiting since {since}]")
        confirming = False
        if isinstance(pending, Approval):
            many = len(pending.actions) > 1
            confirming = st.session_state.get(_confirm_key(tid)) == pending.interrupt_id
            approve_answer = (
                session,
                runner,
                pending,
                f"inbox-{tid}",
                _quick("approve", pending),
                "notice-inbox",
            )
            if risk_of(pending) in CONFIRM_RISKS:
                # One key must not run an `rm -rf`: the click (or `a`) only asks.
                approve.button(
                    "Approve all…" if many else "Approve…",
                    key=f"inbox-approve-{tid}",
                    type="primary",
                    shortcut="a" if first else None,
                    disabled=confirming,
                    help="This executes or deletes: you are asked to confirm first",
                    on_click=st.session_state.__setitem__,
                    args=(_confirm_key(tid), pending.interrupt_id),
                )
            else:
                approve.button(
                    "Approve all" if many else "Approve",
                    key=f"inbox-approve-{tid}",
                    type="primary",
                    shortcut="a" if first else None,
                    on_click=submit_answer,
                    args=approve_answer,
                )
            reject.button(
                "Reject all" if many else "Reject",
                key=f"inbox-reject-{tid}",
                shortcut="d" if first else None,
                on_click=submit_answer,
                args=(
                    session,
                    runner,
                    pending,
                    f"inbox-{tid}",
                    _quick("reject", pending),
                    "notice-inbox",
                ),
            )
        later.button(
            "Next",
            key=f"inbox-next-{tid}",
            shortcut="n" if first else None,
            help="Decide this one later: it moves to the end and the next thread comes first",
            on_click=_put_off,
            args=(tid,),
        )
        if opener.button("Open", key=f"inbox-open-{tid}", shortcut="o" if first else None):
            open_thread(tid)
            st.rerun()
        if confirming:
            assert isinstance(pending, Approval)
            _confirm(pending, approve_answer)
        if error := st.session_state.pop(f"inbox-{tid}-error", None):
            st.error(error)
        with st.expander("Review: edit, respond, or decide call by call"):
            approval_card(session, runner, pending, prefix=f"inbox-{tid}")


def _confirm_key(thread_id: str) -> str:
    return f"inbox-confirm-{thread_id}"


def _confirm(pending: Approval, approve_answer: tuple[Any, ...]) -> None:
    """The question a high-risk Approve asks: what would run, then yes or no."""
    tid = pending.thread_id
    calls = ", ".join(f"`{a.name}` {key_argument(a.args)}" for a in pending.actions)
    st.warning(
        f"**Approve {calls}?** It {'executes' if risk_of(pending) == 'execute' else 'deletes'}: "
        "it runs as soon as you say yes.",
        icon=":material/warning:",
    )
    yes, no, _ = st.columns([1.6, 1, 4])
    yes.button(
        "Yes, approve",
        key=f"inbox-confirm-yes-{tid}",
        type="primary",
        on_click=_approve_confirmed,
        args=approve_answer,
    )
    no.button(
        "Cancel",
        key=f"inbox-confirm-no-{tid}",
        on_click=st.session_state.pop,
        args=(_confirm_key(tid), None),
    )


def _approve_confirmed(session: Session, runner: Runner, pending: Approval, *rest: Any) -> None:
    st.session_state.pop(_confirm_key(pending.thread_id), None)
    submit_answer(session, runner, pending, *rest)
