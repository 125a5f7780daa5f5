"""The sidebar: navigation, the thread list, the open thread's actions. The open thread
and page live in the URL (`?thread=...&view=...`): a link or a reload resumes them."""

from __future__ import annotations

import html
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import streamlit as st

from gatehouse.graph import MessageView, Runner, Session
from gatehouse.graph.protocol.decisions import ALL_TOOLS
from gatehouse.graph.protocol.operations import Compact, Delete, Rename, Revoke, RunOptions, Undo
from gatehouse.graph.protocol.threads import printable, shown_id, thread_id_problem
from gatehouse.ui.web.auto_approve import tab_switch, thread_switch
from gatehouse.ui.web.identity import signed_in_identity
from gatehouse.ui.web.safe_text import label as safe_label
from gatehouse.ui.web.settings import tool_rules
from gatehouse.ui.web.unsent import GIVEN_BACK

VIEWS = {
    "chat": ":material/chat: Chat",
    "inbox": ":material/inbox: Approvals",
    "settings": ":material/settings: Settings",
    "audit": ":material/fact_check: Decisions",
}


_BADGES = {
    "awaiting_approval": " :orange-badge[:material/front_hand: awaiting approval]",
    "failed": " :red-badge[failed]",
    "interrupted": " :red-badge[interrupted]",
    "cancelled": " :gray-badge[stopped]",
    "stopped": " :gray-badge[stopped]",
}


def current_thread() -> str | None:
    return st.query_params.get("thread") or None


def current_view() -> str:
    view = st.query_params.get("view", "chat")
    return view if view in VIEWS else "chat"


def open_thread(thread_id: str | None, view: str = "chat") -> None:
    st.query_params.clear()
    if thread_id:
        st.query_params["thread"] = thread_id
    if view != "chat":
        st.query_params["view"] = view


def ago(ts: float) -> str:
    seconds = max(0, time.time() - ts)
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def sidebar(session: Session, runner: Runner) -> None:
    thread_id = current_thread()
    with st.sidebar:
        st.title(":material/security: Gatehouse")
        waiting = len(session.thread_list().awaiting_approval)
        labels = {**VIEWS, "inbox": f"{VIEWS['inbox']} ({waiting})" if waiting else VIEWS["inbox"]}
        view = current_view()
        picked = st.radio(
            "Page",
            list(VIEWS),
            index=list(VIEWS).index(view),
            format_func=labels.__getitem__,
            key=f"nav-{view}",
            label_visibility="collapsed",
        )
        if picked != view:
            open_thread(thread_id, picked)
            st.rerun()
        if st.button(":material/add: New thread", width="stretch", key="new-thread"):
            open_thread(None)
            st.rerun()
        tab_switch()
        with st.form("open-by-id", clear_on_submit=True, border=False):
            wanted = st.text_input("Open thread by id", placeholder="thread id", key="open-id")
            if st.form_submit_button("Open") and (wanted := wanted.strip()):
                if thread_id_problem(wanted) is None and session.view(wanted).exists:
                    open_thread(wanted)
                    st.rerun()
                st.error(f"No thread {safe_label(shown_id(wanted))}.")
        st.subheader("Threads")
        # Which database the list is from: another directory can mean another file.
        st.caption(f"on `{session.info.get('db', '?')}`")
        _thread_list(session, runner, thread_id)
        if thread_id and session.view(thread_id).exists:
            st.divider()
            thread_actions(session, runner, thread_id)


def _thread_list(session: Session, runner: Runner, current: str | None) -> None:
    threads = session.thread_list(limit=100).threads
    if not threads:
        st.caption("No threads yet: send a message to start one.")
    # Threads with the same title are told apart by when they started and their id.
    titles = Counter(t.title for t in threads)
    for info in threads:
        badge = _BADGES.get(info.status, "")
        if runner.active(info.thread_id) is not None:
            badge = " :blue-badge[running]"
        selected = info.thread_id == current
        # Gray text is unreadable on the selected (primary-colored) button.
        when = ago(info.updated_at)
        if titles[info.title] > 1:
            started = time.strftime("%b %d %H:%M", time.localtime(info.created_at))
            when += f" · started {started} · id {safe_label(info.thread_id[:8])}"
        when = when if selected else f":gray[{when}]"
        label = f"{safe_label(info.title)}{badge}  \n{when}"
        kind: Literal["primary", "secondary"] = "primary" if selected else "secondary"
        if st.button(label, key=f"thread-{info.thread_id}", width="stretch", type=kind):
            open_thread(info.thread_id)
            st.rerun()


def thread_actions(session: Session, runner: Runner, thread_id: str) -> None:
    view = session.view(thread_id)
    info = view.info
    st.subheader("This thread")
    st.caption(f"id `{thread_id}`")
    busy = runner.active(thread_id) is not None
    with st.form(f"rename-{thread_id}", border=False):
        title = st.text_input("Title", value=info.title if info else "")
        if st.form_submit_button("Rename"):
            session.submit(Rename(thread_id, title))
            st.rerun()
    if usage := view.usage:
        cost = f" · ${usage['cost']:.4f}" if usage.get("cost") else ""
        st.caption(
            f"tokens: {int(usage.get('input_tokens', 0))} in / {int(usage.get('output_tokens', 0))} out{cost}"
        )
    # The export is made when clicked: a long thread's export costs a script run ~0.1 s.
    for column, (kind, mime) in zip(
        st.columns(2), (("md", "text/markdown"), ("json", "application/json")), strict=True
    ):
        column.download_button(
            f":material/download: {'Markdown' if kind == 'md' else 'JSON'}",
            partial(session.view(thread_id).export, kind),
            file_name=f"{thread_id}.{kind}",
            mime=mime,
            key=f"export-{kind}-{thread_id}",
        )
    # Undo would drop the pending request: say so, then force.
    paused = info is not None and info.awaiting_approval
    _confirmed_action(
        ":material/undo: Undo last turn",
        (
            "This thread is waiting for your decision: undo drops that request (nothing of it "
            "runs) along with the last turn. Undo anyway?"
            if paused
            else "Undo the last turn?"
        ),
        f"undo-{thread_id}",
        busy,
        lambda: _undo(session, thread_id, force=paused),
    )
    _confirmed_action(
        ":material/delete: Delete thread",
        "Delete this thread for good?",
        f"delete-{thread_id}",
        busy,
        lambda: _delete(session, thread_id),
    )
    thread_switch(session, thread_id)
    _grants(session, thread_id)
    key = f"compact-{thread_id}"
    st.button(
        ":material/compress: Compact now",
        key=key,
        disabled=busy,
        width="stretch",
        help="Not while a run is active"
        if busy
        else "Send the model a summary in place of the older turns; your history stays whole",
        on_click=_compact,
        args=(session, thread_id, key),
    )
    if said := st.session_state.pop(f"{key}-result", None):
        getattr(st, said[0])(said[1])  # st.error, st.info or st.success
    st.button(
        ":material/fact_check: Decision log",
        key=f"audit-{thread_id}",
        width="stretch",
        help="Who approved, edited or rejected which call of this thread, and when",
        on_click=open_thread,
        args=(thread_id, "audit"),
    )


def _undo(session: Session, thread_id: str, *, force: bool) -> None:
    """Undo the last turn, say what it changed on disk (files stay) and give the message back."""
    messages = session.view(thread_id).transcript
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    session.submit(Undo(thread_id, force))
    if last is None:
        return
    # Back in the chat input when it is next drawn (a drawn widget's value is fixed).
    st.session_state[GIVEN_BACK] = messages[last].content
    changed = changes_on_disk(session.info, messages[last:])
    st.session_state["flash"] = (
        "Undone: the last turn is gone from the thread and your message is back in the input. "
        + (
            "It had changed things on disk, and undo does not change them back: "
            + "; ".join(changed)
            if changed
            else "It changed nothing on disk."
        )
    )


def changes_on_disk(info: dict[str, Any], part: list[MessageView]) -> list[str]:
    """The calls of `part` that ran a tool that is not read-only, each as `name args`."""
    risks = {r.get("tool"): r.get("risk") for r in tool_rules(info)}
    ran = {m.tool_call_id for m in part if m.role == "tool" and m.outcome in ("ok", "error")}
    said = []
    for m in part:
        for call in m.tool_calls:
            if call.id in ran and risks.get(call.name, "write") != "read":
                args = ", ".join(
                    f"{k}: {v}"
                    for k, v in call.args.items()
                    if k != "content" and v not in ("", None)
                )
                said.append(f"`{call.name}` {safe_label(args[:120])}")
    return said


def _grants(session: Session, thread_id: str) -> None:
    """The thread's "always allow" grants, who gave each, and Revoke ("*" has its switch)."""
    grants = [g for g in session.view(thread_id).grants if g.tool != ALL_TOOLS]
    if not grants:
        return
    st.caption("**Always allowed in this thread** (calls these cover run without asking)")
    for g in grants:
        text, button = st.columns([3, 1], vertical_alignment="center")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(g.granted_at))
        who = f"by {g.actor or 'unknown'} via {g.source or 'unknown'}, {when}"
        text.markdown(
            f"<code>{html.escape(printable(g.label))}</code> <small>{html.escape(printable(who))}</small>",
            unsafe_allow_html=True,
        )
        button.button(
            ":material/block:",
            key=f"revoke-{thread_id}-{g.label}",
            help=f"Revoke: {g.described}",
            on_click=_revoke,
            args=(session, thread_id, g.label),
        )


def _revoke(session: Session, thread_id: str, label: str) -> None:
    try:
        session.submit(
            Revoke(thread_id, label), RunOptions(source="web", actor=signed_in_identity())
        )
    except Exception as exc:  # noqa: BLE001 - a readable message, never a traceback page
        st.session_state["flash"] = f"Not revoked: {exc}"
    else:
        st.session_state["flash"] = f"Revoked {printable(label)}: its calls ask again."


def _compact(session: Session, thread_id: str, key: str) -> None:
    try:
        done = session.submit(Compact(thread_id)).result().compacted
    except Exception as exc:  # noqa: BLE001 - paused, unfinished run, no hook: said, nothing changed
        st.session_state[f"{key}-result"] = ("error", f"Not compacted: {exc}")
        return
    st.session_state[f"{key}-result"] = (
        ("info", "Nothing old enough to compact: the latest turns always stay as they are.")
        if done is None
        else (
            "success",
            f"Compacted: the model now gets one summary in place of {done.messages_removed} older "
            f"messages; its context went from about {done.tokens_before:,} to "
            f"{done.tokens_after:,} tokens. Your history stays whole (a marker shows where the "
            "model's view was summarised).",
        )
    )


def _delete(session: Session, thread_id: str) -> None:
    session.submit(Delete(thread_id))
    open_thread(None)


def _confirmed_action(
    label: str, question: str, key: str, busy: bool, action: Callable[[], object]
) -> None:
    if st.session_state.get("confirm") != key:
        if st.button(
            label,
            key=key,
            disabled=busy,
            width="stretch",
            help="Not while a run is active" if busy else None,
        ):
            st.session_state["confirm"] = key
            st.rerun()
        return
    st.warning(question)
    yes, no = st.columns(2)
    if yes.button("Yes", key=f"{key}-yes", type="primary"):
        st.session_state.pop("confirm", None)
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - a readable message, not a traceback page
            st.session_state["flash"] = f"{label.split(': ', 1)[-1]} failed: {exc}"
        st.rerun()
    if no.button("Cancel", key=f"{key}-no"):
        st.session_state.pop("confirm", None)
        st.rerun()
