"""The sidebar: navigation, the thread list, and actions on the open thread.

The open thread lives in the URL (`?thread=...`) so a link or a reload resumes it;
the page lives there too (`?view=inbox|settings`, chat by default).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

import streamlit as st

from graph import MessageView, Runner, Session
from graph.protocol.operations import Delete, Rename, Undo
from graph.protocol.threads import shown_id, thread_id_problem
from ui.web.auto_approve import tab_switch
from ui.web.long_threads import undo_question
from ui.web.safe_text import label as safe_label
from ui.web.thread_extras import thread_extras
from ui.web.unsent import give_back

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
        waiting = len(session.awaiting_approval())
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
        _open_by_id(session)
        st.subheader("Threads")
        # Which database the list is from: another directory can mean another file.
        st.caption(f"on `{session.info.get('db', '?')}`")
        _thread_list(session, runner, thread_id)
        if thread_id and session.exists(thread_id):
            st.divider()
            thread_actions(session, runner, thread_id)


def _open_by_id(session: Session) -> None:
    with st.form("open-by-id", clear_on_submit=True, border=False):
        wanted = st.text_input("Open thread by id", placeholder="thread id", key="open-id")
        if st.form_submit_button("Open") and wanted.strip():
            if thread_id_problem(wanted.strip()) is None and session.exists(wanted.strip()):
                open_thread(wanted.strip())
                st.rerun()
            st.error(f"No thread {safe_label(shown_id(wanted.strip()))}.")


def _thread_list(session: Session, runner: Runner, current: str | None) -> None:
    threads = session.threads(limit=100)
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
    info = session.thread(thread_id)
    st.subheader("This thread")
    st.caption(f"id `{thread_id}`")
    busy = runner.active(thread_id) is not None
    with st.form(f"rename-{thread_id}", border=False):
        title = st.text_input("Title", value=info.title if info else "")
        if st.form_submit_button("Rename"):
            session.submit(Rename(thread_id, title))
            st.rerun()
    usage = session.usage(thread_id)
    if usage:
        cost = f" · ${usage['cost']:.4f}" if usage.get("cost") else ""
        st.caption(
            f"tokens: {int(usage.get('input_tokens', 0))} in / {int(usage.get('output_tokens', 0))} out{cost}"
        )
    left, right = st.columns(2)
    # The export is made when clicked: a long thread's export costs a script run ~0.1 s.
    left.download_button(
        ":material/download: Markdown",
        lambda: session.export(thread_id, "md"),
        file_name=f"{thread_id}.md",
        mime="text/markdown",
        key=f"export-md-{thread_id}",
    )
    right.download_button(
        ":material/download: JSON",
        lambda: session.export(thread_id, "json"),
        file_name=f"{thread_id}.json",
        mime="application/json",
        key=f"export-json-{thread_id}",
    )
    paused = (
        info is not None and info.awaiting_approval
    )  # undo would drop the pending request: say so, then force
    _confirmed_action(
        ":material/undo: Undo last turn",
        undo_question(paused),
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
    thread_extras(session, thread_id, busy)


def _undo(session: Session, thread_id: str, *, force: bool) -> None:
    """Undo the last turn, then say what it had changed on disk (undo rewinds the
    thread, not the files) and put the person's message back in the chat input."""
    messages = session.transcript(thread_id)
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    session.submit(Undo(thread_id, force))
    if last is None:
        return
    give_back(messages[last].content)
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
    risks = {r.get("tool"): r.get("risk") for r in info.get("policy") or [] if isinstance(r, dict)}
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


def _delete(session: Session, thread_id: str) -> None:
    session.submit(Delete(thread_id))
    open_thread(None)


def _confirmed_action(
    label: str, question: str, key: str, busy: bool, action: Callable[[], object]
) -> None:
    asking = st.session_state.get("confirm") == key
    if not asking:
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
