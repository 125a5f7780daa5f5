"""The approval card: every gated call of a paused turn, one decision each, submitted
as a `Decide` (edited arguments checked against the tool's schema here first, so a typo
shows next to the field). A card decided elsewhere says who decided what."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from gatehouse.graph import (
    Approval,
    DecisionError,
    NothingPending,
    OutcomeUnknown,
    Pause,
    RunInProgress,
    Runner,
    Session,
    StaleDecision,
)
from gatehouse.graph.protocol.answers import Decision, OutcomeAnswer, ReviewAnswer
from gatehouse.graph.protocol.confirm import to_confirm
from gatehouse.graph.protocol.display import card_text, whole
from gatehouse.graph.protocol.grant_scope import narrow_grant, whole_tool
from gatehouse.graph.protocol.operations import (
    Decide,
    approve,
    edit,
    outcome,
    reject,
    respond,
    review,
)
from gatehouse.graph.protocol.pauses import ActionRequest
from gatehouse.graph.protocol.wording import decided
from gatehouse.ui.web.auto_approve import tab_options
from gatehouse.ui.web.identity import signed_in_identity
from gatehouse.ui.web.long_text import card_block
from gatehouse.ui.web.safe_text import label, markdown

LABELS = {"approve": "Approve", "edit": "Edit", "reject": "Reject", "respond": "Respond"}
OUTCOME_LABELS = {
    "run_again": "Run again",
    "mark_failed": "Mark as failed",
    "respond": "Respond with the real outcome",
}
RISK_COLOR = {
    "read": "green",
    "write": "orange",
    "delete": "red",
    "execute": "red",
    "network": "violet",
}

# The edit preview follows typing: Streamlit sends a text area's value only on blur or
# Ctrl+Enter, so this script presses Ctrl+Enter in an `…-args` field after a 300 ms pause.
LIVE_EDIT_SCRIPT = """<script>
if (!window.ghLiveEditInstalled) {
  window.ghLiveEditInstalled = true;
  const timers = new WeakMap();
  const isArgs = (el) => {
    const box = el.closest && el.closest("[class*='st-key-']");
    return !!box && /(^|\\s)st-key-\\S+-args(\\s|$)/.test(box.className);
  };
  document.addEventListener("input", (event) => {
    const area = event.target;
    if (!(area instanceof HTMLTextAreaElement) || !isArgs(area)) return;
    clearTimeout(timers.get(area));
    timers.set(area, setTimeout(() => {
      if (!area.isConnected) return;
      area.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", code: "Enter", keyCode: 13, which: 13,
                                                     ctrlKey: true, bubbles: true, cancelable: true}));
    }, 300));
  }, true);
}
</script>"""


class InvalidInput(ValueError):
    """What the person typed cannot become a decision."""


def _edited_args(session: Session, name: str, raw: str) -> dict[str, Any]:
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{name}: the edited arguments are not valid JSON ({exc.msg}, line {exc.lineno})"
        ) from None
    if not isinstance(args, dict):
        raise InvalidInput(f"{name}: the edited arguments must be a JSON object")
    if problem := session.check_args(name, args):
        raise InvalidInput(f"{name}: {problem}")
    return args


def _decision(session: Session, key: str, action: ActionRequest, choice: str) -> Decision:
    name = action.name
    grant = st.session_state.get(f"{key}-grant", "ask")
    scope = narrow_grant(name, action.args)
    always: bool | str | None = (
        True if grant == "tool" else scope.pattern if grant == "narrow" and scope else None
    )
    if choice == "approve":
        return approve(always_allow=always)
    if choice == "edit":
        args = _edited_args(
            session, name, st.session_state.get(f"{key}-args", card_text(action.args))
        )
        # A narrow grant names the call as shown: an edit grants no narrow pattern.
        return edit(name, args, always_allow=True if grant == "tool" else None)
    if choice == "reject":
        reason = str(st.session_state.get(f"{key}-reason", "")).strip()
        return reject(reason or "No reason given.")
    answer = str(st.session_state.get(f"{key}-respond", "")).strip()
    if not answer:
        raise InvalidInput(
            f"{name}: write the answer the model should get instead of running the tool"
        )
    return respond(answer)


def _action(
    session: Session,
    pending: Approval,
    index: int,
    action: ActionRequest,
    prefix: str,
    *,
    single: bool,
) -> tuple[str | None, bool]:
    """One call of the card: (the person's choice, whether all of it is in view)."""
    key = f"{prefix}-{pending.interrupt_id}-{index}"
    risk = action.risk or "?"
    in_view = True
    with st.container(border=True):
        color = RISK_COLOR.get(risk, "gray")
        st.markdown(f"**{index + 1}. `{action.name}`** · :{color}-badge[risk: {risk}]")
        first = action.description.split("\n", 1)[0]
        # The request's own description when a policy wrote one; the default one says nothing.
        if first and first != "Tool execution requires approval":
            st.caption(markdown(first))
        if summary := session.tool_summary(action.name):
            st.caption(summary)
        # A multi-call card starts undecided, so "Approve the rest" knows what the person chose.
        choice = _choose("Decision", LABELS, pending.allowed(index), key, 0 if single else None)
        if choice == "edit":
            st.text_area(
                "Arguments (JSON)", value=card_text(action.args), key=f"{key}-args", height=160
            )
        else:
            in_view = card_block(card_text(action.args), f"{key}-args-all", "json")
        # Edited arguments the tool refuses are flagged, never previewed.
        preview, invalid = action.preview, None
        if choice == "edit" and (raw := st.session_state.get(f"{key}-args")) is not None:
            try:
                preview = session.preview(action.name, _edited_args(session, action.name, raw))
            except InvalidInput as exc:
                preview, invalid = None, str(exc)
        if invalid:
            st.error(f"Invalid arguments, no preview: {label(invalid)}", icon=":material/error:")
        elif preview:
            st.caption("preview of the edited call" if choice == "edit" else "preview")
            is_diff = preview.startswith(("---", "@@")) or "\n+++ " in preview
            lang = "diff" if is_diff else "text"
            in_view = card_block(preview, f"{key}-preview-all", lang) and in_view
        elif choice == "edit":
            st.caption("preview: (none for these arguments)")
        if choice == "reject":
            st.text_input("Reason (the model sees it)", key=f"{key}-reason")
        elif choice == "respond":
            st.text_area(
                "Answer to give the model instead of running the tool", key=f"{key}-respond"
            )
        if choice in ("approve", "edit"):
            # "Always allow": the narrow form (this command, this file) or, labelled, the whole tool.
            scope = narrow_grant(action.name, action.args) if choice == "approve" else None
            words = {
                "ask": "No: ask again next time",
                "narrow": f"Always allow {scope.covers} in this thread" if scope else "",
                "tool": f"Always allow the whole tool: {whole_tool(action.name)}",
            }
            st.radio(
                "Later calls like this",
                [c for c in words if words[c]],
                format_func=lambda c: label(words[c]) if c != "ask" else words[c],
                key=f"{key}-grant",
                index=0,
            )
    return choice, in_view


def _choose(
    question: str, labels: dict[str, str], allowed: Sequence[str], key: str, index: int | None
) -> str | None:
    return st.radio(
        question,
        [c for c in allowed if c in labels],
        format_func=labels.__getitem__,
        horizontal=True,
        key=f"{key}-choice",
        index=index,
    )


def _outcome_answer(key: str, choice: str | None) -> OutcomeAnswer:
    if choice is None:
        raise InvalidInput("choose what happened first")
    if choice == "run_again":
        return outcome("run_again")
    if choice == "mark_failed":
        note = str(st.session_state.get(f"{key}-note", "")).strip()
        return outcome("mark_failed", note or None)
    real = str(st.session_state.get(f"{key}-real", "")).strip()
    if not real:
        raise InvalidInput("write what really happened: the model gets it as the tool's result")
    return outcome("respond", real)


def outcome_card(session: Session, runner: Runner, pending: OutcomeUnknown, prefix: str) -> None:
    """ "Outcome unknown": run again, mark as failed, or say what happened (none preselected)."""
    call = pending.call
    key = f"{prefix}-{pending.interrupt_id}-outcome"
    name = call.name
    with st.container(border=True):
        st.markdown(f"### :material/help: Outcome unknown · `{name}`")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(call.started_at))
        st.caption(
            f"started at {when}" + (f" · {call.attempts} attempts" if call.attempts > 1 else "")
        )
        if pending.request.description:
            st.markdown(markdown(pending.request.description))
        in_view = card_block(card_text(call.args), f"{key}-args-all", "json")
        choice = _choose("What happened?", OUTCOME_LABELS, pending.allowed, key, None)
        if choice == "run_again":
            st.warning(
                f"Running `{name}` again may repeat its side effect if the first attempt did its work.",
                icon=":material/warning:",
            )
        elif choice == "mark_failed":
            st.text_input("Note for the model (optional)", key=f"{key}-note")
        elif choice == "respond":
            st.text_area(
                "What really happened (the model gets this as the tool's result)", key=f"{key}-real"
            )
        error_here(key)
        st.button(
            "Submit",
            type="primary",
            key=f"{key}-submit",
            disabled=choice is None or (choice == "run_again" and not in_view),
            on_click=submit,
            args=(session, runner, pending, key, lambda: _outcome_answer(key, choice)),
        )


def error_here(key: str) -> None:
    if error := st.session_state.pop(f"{key}-error", None):
        st.error(error)


def submit(
    session: Session,
    runner: Runner,
    pending: Pause,
    key: str,
    make_answer: Callable[[], ReviewAnswer | OutcomeAnswer],
    notice_key: str | None = None,
    *,
    confirm: bool = False,
) -> None:
    """Resume with the answer (a button's callback): refused, said on the card (`{key}-error`);
    late, who decided (`notice_key`); `confirm`: a risky answer asks first (`confirm_pending`)."""
    if confirm:
        try:
            answer = make_answer()
        except InvalidInput as exc:
            st.session_state[f"{key}-error"] = str(exc)
            return
        if (
            isinstance(pending, Approval)
            and isinstance(answer, ReviewAnswer)
            and to_confirm(pending.actions, answer.decisions)
        ):
            st.session_state[f"{key}-confirm"] = (pending.interrupt_id, answer, notice_key)
            return
        make_answer = lambda: answer  # noqa: E731
    st.session_state.pop(f"{key}-confirm", None)
    st.session_state.pop(notice_key or f"notice-{pending.thread_id}", None)
    st.session_state.get(SHOWN, {}).pop(pending.interrupt_id, None)  # answered here
    try:
        runner.submit(Decide(pending.thread_id, make_answer(), pending.interrupt_id), tab_options())
    except InvalidInput as exc:
        st.session_state[f"{key}-error"] = str(exc)
    except (StaleDecision, NothingPending, RunInProgress):
        st.session_state[notice_key or f"notice-{pending.thread_id}"] = (
            who_decided_text(session, pending, "Your decision was not used: already decided"),
            time.time(),
        )
    except DecisionError as exc:
        st.session_state[f"{key}-error"] = f"Not submitted: {exc}"


NOTICE_S = 60


def show_notice(key: str) -> None:
    """The notice under `key` (text, when), for NOTICE_S s: it outlives the next live update."""
    if (notice := st.session_state.get(key)) is None:
        return
    text, when = notice
    if time.time() - when > NOTICE_S:
        st.session_state.pop(key, None)
    else:
        st.warning(text, icon=":material/info:")


def who_decided_text(session: Session, pending: Pause, lead: str) -> str:
    calls = (
        [a.tool_call_id for a in pending.actions]
        if isinstance(pending, Approval)
        else [pending.call.tool_call_id]
    )
    said: dict[str, str] = {}  # call id -> what became of it
    for _ in range(11):  # the winning run records its decision a moment after it starts
        records = session.view(pending.thread_id).audit(50)
        if any(r.tool_call_id in calls for r in records):
            break
        time.sleep(0.1)
    for r in records:
        if r.tool_call_id in calls and r.tool_call_id not in said:
            by = f"by {r.actor}" if r.actor else ""
            via = f"via {r.source}" if r.source else ""
            who = f"{by} {via}".strip() or "elsewhere"  # "by ana via web"
            said[r.tool_call_id] = f"`{r.tool}` {decided(r.decision)} {who}"
    if not said:
        return f"{lead}: this request was decided elsewhere (the log names no one yet)."
    return f"{lead} — " + "; ".join(said.values()) + "."


def _read_only(pending: Approval, actions: list[ActionRequest]) -> bool:
    """The card without controls for one not among a call's `approvers`; True when drawn."""
    me = (signed_in_identity() or "").strip().lower()
    barred = [
        (a, who)
        for a, config in zip(actions, pending.request.review_configs, strict=False)
        if (who := list(config.approvers or [])) and me not in {w.strip().lower() for w in who}
    ]
    if not barred:
        return False
    with st.container(border=True):
        st.markdown(
            f"### :material/lock: Approval needed · {len(actions)} call{'s' if len(actions) > 1 else ''}"
        )
        for i, action in enumerate(actions):
            st.markdown(f"**{i + 1}. `{action.name}`**")
            card_block(card_text(action.args), f"readonly-{pending.interrupt_id}-{i}", "json")
        names = "; ".join(f"`{a.name}`: {', '.join(who)}" for a, who in barred)
        st.info(
            f"Read-only: only these people may decide — {names}. You are signed in as {signed_in_identity() or 'nobody'}.",
            icon=":material/lock:",
        )
    return True


def approval_card(session: Session, runner: Runner, pending: Pause, prefix: str = "card") -> None:
    """Draw the card; its buttons resume the run in their callbacks."""
    notice_key = f"notice-{pending.thread_id}" if prefix == "card" else "notice-inbox"
    st.session_state.setdefault(SHOWN, {})[pending.interrupt_id] = (pending, notice_key)
    if isinstance(pending, OutcomeUnknown):
        outcome_card(session, runner, pending, prefix)
        return
    actions = pending.actions
    if _read_only(pending, actions):
        return
    single = len(actions) == 1
    card = f"{prefix}-{pending.interrupt_id}"
    with st.container(border=True):
        st.markdown(
            f"### :material/front_hand: Approval needed · {len(actions)} call{'s' if not single else ''}"
        )
        drawn = [
            _action(session, pending, i, a, prefix, single=single) for i, a in enumerate(actions)
        ]
        choices = [c for c, _ in drawn]
        hidden = [i for i, (_, whole) in enumerate(drawn) if not whole]
        undecided = [i for i, c in enumerate(choices) if c is None]
        error_here(card)
        if confirm_pending(session, runner, pending, card):
            return

        def answer(approve_rest: bool) -> Callable[[], ReviewAnswer]:
            def make() -> ReviewAnswer:
                # Read at click time: the choices as the person left them.
                now = [st.session_state.get(f"{card}-{i}-choice", c) for i, c in enumerate(choices)]
                open_ = [i for i, c in enumerate(now) if c is None]
                if not approve_rest and open_:
                    calls = ", ".join(str(i + 1) for i in open_)
                    raise InvalidInput(
                        f"choose a decision for call {calls} (or approve the undecided ones)"
                    )
                if unseen := [i + 1 for i in hidden if now[i] in (None, "approve")]:
                    raise InvalidInput(
                        f"open all of call {', '.join(map(str, unseen))} first (Show all)"
                    )
                return review(
                    [
                        approve() if c is None else _decision(session, f"{card}-{i}", a, str(c))
                        for i, (a, c) in enumerate(zip(actions, now, strict=True))
                    ]
                )

            return make

        left, right = st.columns(2)
        # Nothing out of view is approved: Approve waits until every hidden part is open.
        unseen = [i for i in hidden if choices[i] in (None, "approve")]
        left.button(
            "Approve" if single and choices[0] == "approve" else "Submit decision",
            type="primary",
            key=f"{card}-submit",
            disabled=any(choices[i] == "approve" for i in unseen),
            help="Open every part marked hidden (Show all) first" if unseen else None,
            on_click=submit,
            args=(session, runner, pending, card, answer(False)),
            kwargs={"confirm": True},
        )
        if not single and undecided:
            rest = (
                "Approve all"
                if len(undecided) == len(actions)
                else f"Approve the {len(undecided)} undecided"
            )
            right.button(
                f"{rest} ({len(undecided)} of {len(actions)})",
                key=f"{card}-all",
                disabled=bool(unseen),
                help="Approves only the calls without a decision; your other choices are kept"
                + ("; open every part marked hidden first" if unseen else ""),
                on_click=submit,
                args=(session, runner, pending, card, answer(True)),
                kwargs={"confirm": True},
            )


def confirm_pending(session: Session, runner: Runner, pending: Approval, key: str) -> bool:
    """Asks "approve as shown?" (each risky call whole); True while asked (the card waits)."""
    asked = st.session_state.get(f"{key}-confirm")
    if asked is None or asked[0] != pending.interrupt_id:
        return False
    _, answer, notice_key = asked
    calls = to_confirm(pending.actions, answer.decisions)
    with st.container(border=True, key=f"confirm-{key}"):
        st.warning(
            f"**Approve {len(calls)} call{'s' if len(calls) > 1 else ''} as shown below?** "
            "Each runs as soon as you say yes.",
            icon=":material/warning:",
        )
        for call in calls:
            st.markdown(f"**{call.index + 1}. `{call.name}`**: {label(call.why)}")
            st.code(whole(card_text(call.args)), "json", wrap_lines=True)
        yes, no, _ = st.columns([1.6, 1, 4])
        yes.button(
            "Yes, approve",
            key=f"{key}-confirm-yes",
            type="primary",
            on_click=submit,
            args=(session, runner, pending, key, lambda: answer, notice_key),
        )
        no.button(
            "Cancel (Esc)",
            key=f"{key}-confirm-no",
            shortcut="Escape",
            on_click=st.session_state.pop,
            args=(f"{key}-confirm", None),
        )
    return True


SHOWN = "cards-shown"  # interrupt id -> (pause, notice key): the cards this tab drew


def decided_elsewhere(session: Session) -> None:
    """A card this tab showed, since decided elsewhere, says who decided what (not vanishing)."""
    shown_cards: dict[str, tuple[Pause, str]] = st.session_state.get(SHOWN, {})
    for interrupt_id, (pending, notice_key) in list(shown_cards.items()):
        now = session.view(pending.thread_id).pending
        if now is not None and now.interrupt_id == interrupt_id:
            continue
        del shown_cards[interrupt_id]
        st.session_state[notice_key] = (
            who_decided_text(session, pending, "Decided elsewhere"),
            time.time(),
        )
