"""The approvals inbox: every waiting thread, oldest first, one row each with Approve /
Reject in place (the first row answers to keys). A row approves only what it shows (a
call that does not fit sends Approve to the card); a quick decision waits `UNDO_S` s."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from gatehouse.graph import Approval, OutcomeUnknown, Pause, Runner, Session, ThreadInfo
from gatehouse.graph.protocol import operations as op
from gatehouse.graph.protocol.answers import ReviewAnswer
from gatehouse.graph.protocol.confirm import to_confirm
from gatehouse.graph.protocol.display import shown, visible, visible_json
from gatehouse.ui.web.approval import (
    RISK_COLOR,
    approval_card,
    confirm_pending,
    error_here,
    show_notice,
)
from gatehouse.ui.web.approval import submit as submit_answer
from gatehouse.ui.web.safe_text import label
from gatehouse.ui.web.threads import ago, open_thread

# Lowest to highest; no declared risk counts as the highest (an unknown tool may execute).
RISK_ORDER = ("read", "network", "write", "delete", "execute")
# A row shows each call's arguments on one line, up to this many characters.
ROW_CHARS = 160
UNDO_S = 5.0


def _call_line(name: str, args: dict[str, object]) -> tuple[str, bool]:
    """A call as the row shows it, and whether that is all of it."""
    part = shown(visible_json(args), lines=1, chars=ROW_CHARS)
    rest = "" if part.complete else f" … *({label(part.hidden)})*"
    # A tool name is a tool's (only real tools are asked about): a code span, no backtick.
    return f"`{visible(name).replace('`', '')}` {label(part.head)}{rest}", part.complete


def _what(pending: Pause) -> tuple[list[str], bool]:
    """The row's lines (one per call, and the risk) and whether they show everything."""
    if isinstance(pending, OutcomeUnknown):
        line, _ = _call_line(pending.call.name, pending.call.args)
        return [f"{line} · :red-badge[outcome unknown]"], False
    assert isinstance(pending, Approval)
    lines = [_call_line(a.name, a.args) for a in pending.actions]
    risks = [a.risk if a.risk in RISK_ORDER else "execute" for a in pending.actions]
    risk = max(risks, key=RISK_ORDER.index, default="execute")
    numbered = [
        f"call {i + 1}: {text}" if len(lines) > 1 else text for i, (text, _) in enumerate(lines)
    ]
    numbered[-1] += f" · :{RISK_COLOR.get(risk, 'gray')}-badge[risk: {risk}]"
    return numbered, all(whole for _, whole in lines)


def _quick(kind: str, pending: Approval) -> Callable[[], ReviewAnswer]:
    reason = None if kind == "approve" else "Rejected from the approvals inbox."
    return lambda: op.review(
        [op.reject(reason) if reason else op.approve() for _ in pending.actions]
    )


PAGE = 50  # inbox rows drawn at once


HELD = "inbox-held"  # thread id -> Held: quick decisions waiting out UNDO_S


@dataclass(frozen=True)
class Held:
    pending: Approval
    kind: str  # "approve" or "reject"
    until: float


def _hold(session: Session, runner: Runner, pending: Approval, kind: str) -> None:
    """A quick Approve / Reject: sent after UNDO_S unless undone (a risky approval asks first)."""
    key = f"inbox-{pending.thread_id}"
    if kind == "approve":
        answer = _quick(kind, pending)()
        if to_confirm(pending.actions, answer.decisions):
            st.session_state[f"{key}-confirm"] = (pending.interrupt_id, answer, NOTICE)
            return
    st.session_state.setdefault(HELD, {})[pending.thread_id] = Held(
        pending, kind, time.time() + UNDO_S
    )


def _send_due(session: Session, runner: Runner) -> bool:
    """Send the held decisions whose moment has passed; True when one was sent."""
    held: dict[str, Held] = st.session_state.get(HELD, {})
    due = [tid for tid, h in held.items() if h.until <= time.time()]
    for tid in due:
        h, key = held.pop(tid), f"inbox-{tid}"
        submit_answer(session, runner, h.pending, key, _quick(h.kind, h.pending), NOTICE)
        if f"{key}-error" not in st.session_state and NOTICE not in st.session_state:
            what = "Approved" if h.kind == "approve" else "Rejected"
            st.session_state[NOTICE] = (f"{what}: {_names(h.pending)}.", time.time())
    return bool(due)


@st.fragment(run_every=1.0)
def _undo_timer(session: Session, runner: Runner) -> None:
    if _send_due(session, runner):
        st.rerun(scope="app")


def _names(pending: Approval) -> str:
    return ", ".join(f"`{label(a.name)}`" for a in pending.actions)


def _held_row(tid: str, held: Held, *, first: bool) -> None:
    what = "Approving" if held.kind == "approve" else "Rejecting"
    with st.container(border=True, key=f"inbox-held-{tid}"):
        text, undo = st.columns([6, 1.3], vertical_alignment="center")
        text.markdown(
            f"**{what}** {_names(held.pending)} (you pressed "
            f"{'Approve' if held.kind == 'approve' else 'Reject'}): sent in {UNDO_S:g} s "
            "unless you undo."
        )
        undo.button(
            "Undo",
            key=f"inbox-undo-{tid}",
            shortcut="u" if first else None,
            on_click=st.session_state.get(HELD, {}).pop,
            args=(tid, None),
        )


NOTICE = "notice-inbox"


def inbox_page(session: Session, runner: Runner) -> None:
    st.header(":material/inbox: Approvals inbox")
    _send_due(session, runner)
    inbox = session.thread_list()
    waiting = inbox.awaiting_approval
    show_notice(NOTICE)
    if not waiting:
        st.success("Nothing is waiting for a decision.")
        return
    st.caption(
        f"{len(waiting)} thread{'s' if len(waiting) != 1 else ''} waiting, oldest first. "
        "Keys for the first row: a approve (asks first when a call executes, deletes or writes "
        "where code runs later) · d reject · n next · o open · u undo."
    )
    first = True
    # The first page only, its cards in one query; oldest first, then what was put off ("Next").
    rank = {t: i for i, t in enumerate(st.session_state.get(LATER, []))}
    page = sorted(waiting, key=lambda w: (w.thread_id in rank, rank.get(w.thread_id, 0)))[:PAGE]
    if len(waiting) > PAGE:
        st.caption(f"Showing the first {PAGE} of {len(waiting)}.")
    held: dict[str, Held] = st.session_state.get(HELD, {})
    pauses = inbox.pending_many([i.thread_id for i in page if i.thread_id not in held])
    for info in page:
        if info.thread_id in held:
            _held_row(
                info.thread_id, held[info.thread_id], first=info.thread_id == next(iter(held))
            )
            continue
        pending = pauses.get(info.thread_id)
        if pending is None:
            continue  # decided elsewhere a moment ago
        _row(session, runner, info, pending, first=first)
        first = False
    if held:
        _undo_timer(session, runner)


LATER = "inbox-later"  # threads put off with "Next", in that order (this browser session)


def _put_off(thread_id: str) -> None:
    st.session_state[LATER] = [
        *(t for t in st.session_state.get(LATER, []) if t != thread_id),
        thread_id,
    ]


def _row(
    session: Session, runner: Runner, info: ThreadInfo, pending: Pause, *, first: bool
) -> None:
    tid = info.thread_id
    key = f"inbox-{tid}"
    lines, all_shown = _what(pending)
    opened = f"inbox-open-card-{tid}"
    with st.container(border=True, key=f"inbox-row-{tid}"):
        text, approve, reject, later, opener = st.columns(
            [4.4, 1.5, 1.3, 1.2, 1.3], vertical_alignment="center"
        )
        confirming = False
        if isinstance(pending, Approval):
            many = len(pending.actions) > 1
            confirming = (st.session_state.get(f"{key}-confirm") or ("",))[0] == (
                pending.interrupt_id
            )
            # When part of a call is not in the row, approving happens on the open card.
            approve.button(
                ("Approve all" if many else "Approve") if all_shown else "Review to approve",
                key=f"inbox-approve-{tid}",
                type="primary",
                shortcut="a" if first else None,
                disabled=confirming and all_shown,
                help="Asks first when a call executes, deletes or writes where code runs later"
                if all_shown
                else "A call does not fit the row: open it all, then approve it on its card",
                on_click=_hold if all_shown else st.session_state.__setitem__,
                args=(session, runner, pending, "approve") if all_shown else (opened, True),
            )
            reject.button(
                "Reject all" if many else "Reject",
                key=f"inbox-reject-{tid}",
                shortcut="d" if first else None,
                on_click=_hold,
                args=(session, runner, pending, "reject"),
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
        # The text last: a row's words never show before the buttons that act on them.
        since = ago(info.pending_since or info.updated_at)
        text.markdown(
            f"**{label(info.title)}** · :gray[waiting since {since}]  \n" + "  \n".join(lines)
        )
        if confirming:
            assert isinstance(pending, Approval)
            confirm_pending(session, runner, pending, key)
        error_here(key)
        with st.expander(
            "Review: see every call whole, edit, respond, or decide call by call",
            expanded=bool(st.session_state.get(opened)),
        ):
            approval_card(session, runner, pending, prefix=key)
