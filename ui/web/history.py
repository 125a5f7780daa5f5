"""The thread's history, windowed: the last `WINDOW` turns as a few static Markdown
elements each (a page run costs what it draws). "Show earlier" widens the window, "Find"
jumps to an older turn; a user message with other versions has a `< 2/3 >` switcher."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import streamlit as st

from gatehouse.graph import (
    AwaitingDecision,
    Branches,
    DecisionRecord,
    MessageView,
    RunInProgress,
    Runner,
)
from gatehouse.graph.protocol.operations import Fork, SwitchBranch
from gatehouse.graph.protocol.threads import turn_starts
from gatehouse.ui.web.auto_approve import tab_options
from gatehouse.ui.web.copy import copy_html
from gatehouse.ui.web.long_text import draw_message_text
from gatehouse.ui.web.safe_text import label, markdown
from gatehouse.ui.web.thinking import CUT_OFF_NOTE, draw_thinking
from gatehouse.ui.web.tool_blocks import NOT_RUN, result_row, row_html, summary_html

WINDOW = 8
APPROVALS = 500
FIND_RESULTS = 20
# A jump from "Find" draws the turn found and the ones after it, up to this many.
FOUND_TURNS = 4


@dataclass(frozen=True)
class Turn:
    """messages[start:end]: a user message and everything after it up to the next."""

    number: int | None  # 1-based, as gatehouse.graph.protocol.threads.turn_starts; None: a summary
    start: int
    end: int


@dataclass(frozen=True)
class Drawing:
    """What every turn drawn in one place of the page shares."""

    runner: Runner
    thread_id: str
    took: dict[str, float]  # tool durations this process saw (live_run.durations)
    branches: Mapping[int, Branches]
    can_fork: bool
    missing: str = NOT_RUN  # what a call without a result is said to be

    @cached_property
    def approvals(self) -> dict[str, DecisionRecord]:
        """Each call's answer on its approval card, by call id (the newest `APPROVALS`)."""
        records = self.runner.session.view(self.thread_id).audit(APPROVALS)  # newest first
        return {r.tool_call_id: r for r in reversed(records) if r.question == "review"}


def turns_of(messages: Sequence[MessageView]) -> list[Turn]:
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)  # messages before the first user message (a summary) form a part
    ends = [*starts[1:], len(messages)]
    numbers = {i: k + 1 for k, i in enumerate(turn_starts(messages))}
    return [Turn(numbers.get(s), s, e) for s, e in zip(starts, ends, strict=True) if e > s]


def draw_window(d: Drawing, messages: Sequence[MessageView], turns: list[Turn]) -> None:
    """The last turns, or after a "Find" jump the found turn and a few after it."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool"} if turns else {}
    thread_id = d.thread_id
    found = _found(thread_id, turns)
    if found is None:
        shown = int(st.session_state.get(f"shown-{thread_id}", WINDOW))
        at, end = max(0, len(turns) - shown), len(turns)
        if at:
            more = min(WINDOW * 4, at)
            left, right = st.columns([1, 2])
            left.button(
                f":material/expand_less: Show {more} earlier turn{'s' if more != 1 else ''} ({at} hidden)",
                key=f"earlier-{thread_id}",
                on_click=st.session_state.__setitem__,
                args=(f"shown-{thread_id}", shown + more),
            )
            _find_popover(right, thread_id, messages, turns)
    else:
        at, count = found
        end = min(len(turns), at + count)
        left, right = st.columns([1, 2])
        _latest_button(left, f"latest-top-{thread_id}", thread_id)
        _find_popover(right, thread_id, messages, turns)
        first, last = turns[at].number, turns[end - 1].number
        span = f"turn {first}" if end - at == 1 else f"turns {first}–{last}"
        gap = len(turns) - end
        # The latest turn is drawn below in any case (chat_page: it is where a run goes on).
        st.caption(
            f"Found: showing {span}"
            + (
                f"; the {gap} turn{'s' if gap != 1 else ''} between them and the latest are not drawn."
                if gap
                else "."
            )
        )
    for t in turns[at:end]:
        draw_turn(d, messages[t.start : t.end], t.start, results)
    if found is not None and end < len(turns):
        left, right = st.columns([1, 2])
        more = min(WINDOW, len(turns) - end)
        left.button(
            f":material/expand_more: Show {more} later turn{'s' if more != 1 else ''}",
            key=f"later-{thread_id}",
            on_click=st.session_state.__setitem__,
            args=(f"found-{thread_id}", (turns[at].start, found[1] + more, len(turns))),
        )
        _latest_button(right, f"latest-{thread_id}", thread_id)


def _found(thread_id: str, turns: list[Turn]) -> tuple[int, int] | None:
    """(index in `turns` of the turn jumped to, how many to draw), or None. A jump holds
    while the thread has the turns it had then: a change brings back the latest turns."""
    jump = st.session_state.get(f"found-{thread_id}")
    if jump is None:
        return None
    start, count, length = jump
    at = next((k for k, t in enumerate(turns) if t.start == start), None)
    if at is None or length != len(turns):
        st.session_state.pop(f"found-{thread_id}", None)
        return None
    return at, count


def _back_to_latest(thread_id: str) -> None:
    st.session_state.pop(f"found-{thread_id}", None)
    st.session_state[f"shown-{thread_id}"] = WINDOW


def _latest_button(where: Any, key: str, thread_id: str) -> None:
    where.button(
        ":material/vertical_align_bottom: Back to the latest turns",
        key=key,
        on_click=_back_to_latest,
        args=(thread_id,),
    )


def _find_popover(
    where: Any, thread_id: str, messages: Sequence[MessageView], turns: list[Turn]
) -> None:
    jumps = st.session_state.get(f"find-jumps-{thread_id}", 0)
    with where.popover(
        ":material/search: Find in this thread", key=f"find-popover-{thread_id}-{jumps}"
    ):
        _find(thread_id, messages, turns)


@st.fragment
def _find(thread_id: str, messages: Sequence[MessageView], turns: list[Turn]) -> None:
    """A fragment: typing reruns only the popover, not the page under it. A jump reruns all."""
    wanted = st.text_input("Text to find", key=f"find-{thread_id}").strip().lower()
    if not wanted:
        st.caption("Searches every message of the thread, newest first.")
        return
    hits = [
        t
        for t in reversed(turns)
        if t.number is not None
        and any(wanted in (m.content or "").lower() for m in messages[t.start : t.end])
    ]
    if not hits:
        st.caption("No turn contains it.")
        return
    for turn in hits[:FIND_RESULTS]:
        first = (messages[turn.start].content or "").strip().replace("\n", " ")
        if st.button(
            f"Turn {turn.number}: {label(first[:60])}", key=f"jump-{thread_id}-{turn.number}"
        ):
            st.session_state[f"found-{thread_id}"] = (turn.start, FOUND_TURNS, len(turns))
            # A popover stays open across reruns: a new key makes a new, closed one.
            jumps = f"find-jumps-{thread_id}"
            st.session_state[jumps] = st.session_state.get(jumps, 0) + 1
            st.rerun(scope="app")
    if len(hits) > FIND_RESULTS:
        st.caption(f"… and {len(hits) - FIND_RESULTS} older turns.")


def draw_turn(
    d: Drawing,
    part: Sequence[MessageView],
    offset: int,
    results: Mapping[str | None, MessageView],
) -> None:
    """One turn: the user's bubble, then one assistant bubble for the rest."""
    thread_id, i = d.thread_id, 0
    if part and part[0].summary:  # compaction's summary of older turns: not the person's
        st.markdown(summary_html(part[0].content), unsafe_allow_html=True)
        i = 1
    elif part and part[0].role == "user":
        with st.chat_message("user"):
            draw_message_text(thread_id, part[0], as_written=True)
            _user_actions(d, offset, part[0].content)
        i = 1
    rest = [m for m in part[i:] if m.role == "assistant"]
    if not rest:
        return
    with st.chat_message("assistant"):
        for m in rest:
            draw_thinking(m)
            if m.notice:
                st.info(markdown(m.content), icon=":material/stop_circle:")
            elif m.content:
                draw_message_text(thread_id, m)
            if m.cut_off:
                st.warning(CUT_OFF_NOTE, icon=":material/content_cut:")
            rows = [
                row_html(call.name, call.args, None, "", None, missing=d.missing)
                if (result := results.get(call.id)) is None
                else result_row(
                    thread_id,
                    call,
                    result,
                    d.took.get(call.id, result.duration_ms),
                    d.approvals.get(call.id),
                )
                for call in m.tool_calls
            ]
            if rows:
                st.markdown("\n".join(rows), unsafe_allow_html=True)
        if answer := "\n\n".join(m.content for m in rest if m.content and not m.notice):
            st.markdown(copy_html(answer, what="answer"), unsafe_allow_html=True)


def _user_actions(d: Drawing, index: int, text: str) -> None:
    """Under a user message: copy, its versions (`< 2/3 >`), edit and fork."""
    runner, thread_id, can_fork = d.runner, d.thread_id, d.can_fork
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        st.markdown(copy_html(text, what="message"), unsafe_allow_html=True, width="content")
        if (versions := d.branches.get(index)) is not None:
            _version_switcher(runner, thread_id, versions, enabled=can_fork)
        if can_fork and st.session_state.get(f"forking-{thread_id}") != index:
            st.button(
                ":material/edit: Edit and rerun from here",
                key=f"fork-{thread_id}-{index}",
                help=(
                    "Change this message and run the thread again from it: what came after it "
                    "is replaced by the new run. The old version is kept: switch back with < >."
                ),
                type="tertiary",
                on_click=st.session_state.__setitem__,
                args=(f"forking-{thread_id}", index),
            )
    if can_fork and st.session_state.get(f"forking-{thread_id}") == index:
        _fork_editor(runner, thread_id, index, text)


def _version_switcher(runner: Runner, thread_id: str, versions: Branches, *, enabled: bool) -> None:
    k, ids = versions.current, versions.message_ids
    key = f"branch-{thread_id}-{versions.index}"
    for to, side, edge in ((k - 1, "left", "first"), (k + 1, "right", "latest")):
        there = 0 <= to < len(ids)
        st.button(
            f":material/chevron_{side}:",
            key=f"{key}-{'prev' if to < k else 'next'}",
            type="tertiary",
            disabled=not enabled or not there,
            help=f"Version {to + 1}: {label(versions.previews[to])}"
            if there
            else f"This is the {edge} version",
            on_click=_switch,
            args=(runner, thread_id, ids[to] if there else ""),
        )
        if to < k:
            st.markdown(
                f'<span class="gh-branch">{versions.label}</span>',
                unsafe_allow_html=True,
                width="content",
            )


def _switch(runner: Runner, thread_id: str, message_id: str) -> None:
    try:
        runner.submit(SwitchBranch(thread_id, message_id))
    except (AwaitingDecision, RunInProgress, ValueError) as exc:
        st.session_state["flash"] = f"Not switched: {exc}"


def _fork_editor(runner: Runner, thread_id: str, index: int, text: str) -> None:
    # The editor (three widgets) only for the one message asked for.
    with st.container(border=True):
        new_text = st.text_area("Message", value=text, key=f"fork-text-{thread_id}-{index}")
        sure = st.checkbox(
            "Replace this message and run the thread again from it (the old version stays: "
            "switch back with < >)",
            key=f"fork-sure-{thread_id}-{index}",
        )
        left, right = st.columns(2)
        go = left.button(
            "Rerun with this message",
            key=f"fork-go-{thread_id}-{index}",
            disabled=not sure,
            type="primary",
        )
        right.button(
            "Cancel",
            key=f"fork-cancel-{thread_id}-{index}",
            on_click=st.session_state.pop,
            args=(f"forking-{thread_id}", None),
        )
        if go:
            st.session_state.pop(f"forking-{thread_id}", None)
            try:
                runner.submit(Fork(thread_id, index, new_text), tab_options())
            except Exception as exc:  # noqa: BLE001 - shown to the person, never a traceback page
                st.error(f"Cannot fork: {exc}")
                return
            st.rerun()
