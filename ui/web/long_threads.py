"""Long threads in the web app: compact now, whole outputs of offloaded tool results,
and an undo that says what it drops while the thread waits for a decision.

An offloaded result's row links to its whole output on a page of its own
(`?view=output&thread=…&call=…`, a new tab): the chat page carries only the head the
model got, whatever the output's size, and the whole text is read from storage only
when someone asks for it.
"""

from __future__ import annotations

import html
from urllib.parse import urlencode

import streamlit as st

from graph import DecisionRecord, MessageView, Session
from graph.protocol.decisions import who_decided
from graph.protocol.operations import Compact
from graph.protocol.threads import ToolCallView
from ui.web.safe_text import code, label
from ui.web.tool_blocks import row_html

OUTPUT_VIEW = "output"


def result_row(
    thread_id: str,
    call: ToolCallView,
    result: MessageView,
    duration_ms: float | None,
    decided: DecisionRecord | None = None,
) -> str:
    """A finished call's history row (tool_blocks.row_html), saying who let it run and
    from where (`decided`: its answer in the decision log), or that it ran without a
    click, and, for an offloaded output, linking to the whole of it."""
    row = row_html(call.name, call.args, result.outcome, result.content, duration_ms)
    notes = []
    if why := result.without_a_click:  # ran without anyone clicking: auto-approve, or which grant
        notes.append(why)
    elif (
        decided is not None
        # A call that only shares the id (models reuse ids) was not this decision's.
        and (decided.binds(call.to_dict()) or decided.binds(call.to_dict(), as_run=True))
        and (said := who_decided([decided])) is not None
    ):
        notes.append(said.replace(f" {decided.tool} ", " ", 1).rsplit(" at ", 1)[0])
    if result.offloaded:
        notes.append(
            f"output {result.total_chars:,} characters" if result.total_chars else "large output"
        )
    if notes:
        # The first </summary> is the row's own: everything inside it is escaped.
        row = row.replace("</summary>", html.escape(" · " + " · ".join(notes)) + "</summary>", 1)
    if result.offloaded:
        query = urlencode({"view": OUTPUT_VIEW, "thread": thread_id, "call": call.id})
        size = f" ({result.total_chars:,} characters)" if result.total_chars else ""
        link = (
            f'<a href="?{html.escape(query)}" target="_blank" rel="noopener">'
            f"Show whole output{size} ↗</a> <small>(the model got the head above, and reads on on demand)</small>"
        )
        row = row.removesuffix("</details>") + f"<p>{link}</p></details>"
    return row


SUMMARY_MARKER = "The model's view was summarised here"


def summary_html(text: str) -> str:
    """The marker where compaction summarised the model's view: the turns above stay in
    the history; the model is sent the summary (collapsed here) in their place."""
    body = html.escape(code(text.strip())).replace("\n", "&#10;")
    return (
        f'<details class="gh-tool gh-compacted"><summary>⇣ {SUMMARY_MARKER}: from here on '
        "the model gets this summary instead of the turns above (they stay in your history)</summary>"
        f'<div style="white-space: pre-wrap">{body}</div></details>'
    )


def whole_output_page(session: Session) -> bool:
    """The page of one tool call's whole output (`?view=output`); False on other pages."""
    params = st.query_params
    if params.get("view") != OUTPUT_VIEW:
        return False
    thread_id, call_id = params.get("thread", ""), params.get("call", "")
    st.header(":material/description: Whole tool output")
    text = session.tool_output(thread_id, call_id) if thread_id and call_id else None
    if text is None:
        # Both come from the URL: a link someone sent can put anything there.
        st.error(f"No output for call {label(repr(call_id))} of thread {label(repr(thread_id))}.")
        return True
    st.caption(f"thread {label(thread_id)} · call {label(call_id)} · {len(text):,} characters")
    st.download_button(
        ":material/download: Download",
        text,
        file_name=f"{call_id}.txt",
        mime="text/plain",
        key="output-download",
    )
    st.code(code(text), language="text")
    return True


def compact_control(session: Session, thread_id: str, busy: bool) -> None:
    """ "Compact now": summarise the older turns for the model (the history stays whole)."""
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
        kind, text = said
        getattr(st, kind)(text)


def _compact(session: Session, thread_id: str, key: str) -> None:
    try:
        done = session.submit(Compact(thread_id)).result().compacted
    except Exception as exc:  # noqa: BLE001 - paused, unfinished run, no hook: said, nothing changed
        st.session_state[f"{key}-result"] = ("error", f"Not compacted: {exc}")
        return
    if done is None:
        st.session_state[f"{key}-result"] = (
            "info",
            "Nothing old enough to compact: the latest turns always stay as they are.",
        )
        return
    st.session_state[f"{key}-result"] = (
        "success",
        (
            f"Compacted: the model now gets one summary in place of {done.messages_removed} older messages; its "
            f"context went from about {done.tokens_before:,} to {done.tokens_after:,} tokens. Your history stays whole "
            "(a marker shows where the model's view was summarised)."
        ),
    )


def undo_question(paused: bool) -> str:
    if paused:
        return (
            "This thread is waiting for your decision: undo drops that request (nothing of it runs) "
            "along with the last turn. Undo anyway?"
        )
    return "Undo the last turn?"
