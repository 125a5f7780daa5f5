"""The decision log page (`?view=audit`): who decided what, when, from where, newest
first, one `<details>` row each; filters narrow the newest `SCAN` records."""

from __future__ import annotations

import html
import time

import streamlit as st

from gatehouse.graph import Session
from gatehouse.graph.protocol.decisions import DecisionRecord
from gatehouse.graph.protocol.display import visible
from gatehouse.graph.protocol.wording import decided
from gatehouse.ui.web.safe_text import pretty
from gatehouse.ui.web.tool_blocks import pre_html

LIMITS = (50, 200, 1000)
# How far back filters look: the newest this many records of the scope.
SCAN = 5000
_MARK = {
    "approve": "✓",
    "edit": "✎",
    "respond": "↩",
    "auto_approve": "⚡",
    "run_again": "↻",
    "reject": "✗",
    "mark_failed": "✗",
}
_SWITCH = {"grant": "auto-approve switched on", "revoke": "auto-approve switched off"}


def record_html(record: DecisionRecord, title: str | None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.decided_at))
    # "ana@example.com via web": the signed-in identity the log recorded, and the front end.
    who = (record.actor or "unknown") + (f" via {record.source}" if record.source else "")
    where = f" · {title}" if title else ""
    what = _decision(record, whole=True)
    summary = f"{_MARK.get(record.decision, '•')} {when}{where} · {what} · by {who}"
    # In a <div>: on a line of its own, not run into the label that follows.
    body = f"<div><small>thread {html.escape(record.thread_id)} · call {html.escape(record.tool_call_id or '-')}</small></div>"
    if record.args:
        body += "<small>arguments that ran</small>" + pre_html(pretty(record.args))
    if (diff := record.diff()) is not None:
        body += "<small>the person's edit (requested → ran)</small>" + pre_html(diff)
    if record.message:
        body += "<small>reason / answer</small>" + pre_html(record.message)
    if record.always_allow:
        body += f"<small>always allow granted: {html.escape(record.always_allow)}</small>"
    return f'<details class="gh-tool"><summary>{html.escape(visible(summary))}</summary>{body}</details>'


def _decision(record: DecisionRecord, *, whole: bool = False) -> str:
    """The decision's words; `whole`: with the tool or what a switch was for (a row's title)."""
    if record.tool == "*" and record.decision in _SWITCH:
        return _SWITCH[record.decision] + (" for the thread" if whole else "")
    return f"{record.tool} · {decided(record.decision)}" if whole else decided(record.decision)


def audit_page(session: Session, thread_id: str | None) -> None:
    st.header(":material/fact_check: Decision log")
    scope = "all"
    left, right = st.columns([3, 1])
    if thread_id is not None:
        chosen = left.segmented_control(
            "Show",
            ["thread", "all"],
            default="thread",
            key="audit-scope",
            format_func={"thread": "This thread", "all": "All threads"}.__getitem__,
        )
        scope = chosen or "thread"
    limit = right.selectbox("Newest", LIMITS, index=1, key="audit-limit")
    records = (
        session.view(thread_id)
        if thread_id is not None and scope == "thread"
        else session.thread_list()
    ).audit(SCAN)
    if not records:
        st.info("No decisions recorded yet" + (" for this thread." if scope == "thread" else "."))
        return
    titles = None
    if scope == "all":
        titles = {t.thread_id: t.title for t in session.thread_list(limit=1000).threads}
    records = _filtered(records, titles)
    st.caption(
        f"{min(len(records), limit)} of {len(records)} matching decision{'s' if len(records) != 1 else ''}, "
        "newest first. Kept through undo, fork and deletion."
    )
    if not records:
        st.info("No decision matches these filters.")
        return
    rows = [
        record_html(r, None if titles is None else titles.get(r.thread_id, r.thread_id[:8]))
        for r in records[:limit]
    ]
    st.markdown("\n".join(rows), unsafe_allow_html=True)


def _filtered(records: list[DecisionRecord], titles: dict[str, str] | None) -> list[DecisionRecord]:
    """The records the filters keep; `titles` None: one thread's log (no thread filter)."""
    columns = st.columns(4 if titles is not None else 3)
    keep = records
    if titles is not None:
        # What is chosen stays an option when the records change under it (a new scope).
        threads = list(
            dict.fromkeys(
                [*(r.thread_id for r in records), *st.session_state.get("audit-filter-thread", [])]
            )
        )
        names = {t: f"{titles.get(t) or '(deleted thread)'} · {t[:8]}" for t in threads}
        chosen = columns[0].multiselect(
            "Thread",
            threads,
            format_func=lambda t: visible(names[t]),
            key="audit-filter-thread",
            placeholder="every thread",
        )
        keep = [r for r in keep if not chosen or r.thread_id in chosen]
    rest = columns[-3:]
    for column, name, of in (
        (rest[0], "Tool", lambda r: "(every tool)" if r.tool == "*" else r.tool),
        (rest[1], "Decision", _decision),
        (rest[2], "Who", lambda r: r.actor or "unknown"),
    ):
        key = f"audit-filter-{name.lower()}"
        values = sorted({of(r) for r in records} | set(st.session_state.get(key, [])))
        chosen = column.multiselect(
            name,
            values,
            format_func=visible,
            key=key,
            placeholder=f"any {name.lower()}" if name != "Who" else "anyone",
        )
        keep = [r for r in keep if not chosen or of(r) in chosen]
    return keep
