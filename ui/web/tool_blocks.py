"""How one tool call is drawn: in the history a static `<details>` row (an `st.status`
sleeps 50 ms when created and costs a React subtree); live an `st.status`, redrawn as a
row when the call did not run (never a finished status's green tick)."""

from __future__ import annotations

import html
from typing import Any, Literal
from urllib.parse import urlencode

import streamlit as st

from gatehouse.graph import DecisionRecord, MessageView
from gatehouse.graph.protocol.decisions import who_decided
from gatehouse.graph.protocol.display import visible
from gatehouse.graph.protocol.messages import call_outcome, exit_note
from gatehouse.graph.protocol.threads import ToolCallView
from gatehouse.ui.web.safe_text import label as safe_label
from gatehouse.ui.web.safe_text import pretty

OUTPUT_CHARS = 4_000

# A call's outcome: its live block's state, its word, its history row's mark.
_OUTCOME: dict[str, tuple[Literal["complete", "error"], str, str]] = {
    "ok": ("complete", "done", "✓"),
    "responded": ("complete", "answered by you", "↩"),
    "error": ("error", "failed", "✗"),
    "rejected": ("error", "rejected", "✗"),
    "denied": ("error", "denied", "✗"),
    "stopped": ("error", "stopped by you", "■"),
}

NOT_RUN_STATUSES = frozenset({"responded", "rejected", "denied"})

# What a call without a result is said to be.
WAITING = "waiting for your decision"
NOT_RUN = "not run: the run ended before it"


def clip(text: str) -> str:
    """The head of a tool's output, hidden characters shown escaped."""
    return visible(text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "\n… (truncated)")


def _word(tool: str, status: str, output: str, duration_ms: float | None) -> str:
    """done, failed, "failed (exit code 2)", rejected…, and how long it took."""
    word = _OUTCOME[status][1] if status in _OUTCOME else status
    took = f" · {duration_ms / 1000:.2f} s" if duration_ms is not None else ""
    return word + (exit_note(tool, output) if status == "error" else "") + took


def label(
    name: str, status: str | None, duration_ms: float | None, output: str = "", tool: str = ""
) -> str:
    """A live call's label: `name` as shown, `tool` the tool's own name."""
    word = "running…" if status is None else _word(tool or name, status, output, duration_ms)
    return f":material/build: {safe_label(name)} · {word}"  # a label renders Markdown


def html_text(text: str) -> str:
    """`text` for an HTML block in Markdown: hidden characters shown, escaped, newlines as
    character references (a blank line would end the HTML block)."""
    return html.escape(visible(text)).replace("\n", "&#10;")


def pre_html(text: str) -> str:
    """Preformatted, for static HTML rows: not `<pre>` (Streamlit's Markdown drops its line
    breaks); pre-wrap inline too, for a row drawn before app.py's stylesheet arrives."""
    return f'<div class="gh-pre" style="white-space: pre-wrap">{html_text(text)}</div>'


def said_html(text: str) -> str:
    """A person's message as written: spacing kept, no Markdown or HTML, long lines wrapped."""
    return (
        '<div class="gh-said" style="white-space: pre-wrap; overflow-wrap: anywhere">'
        f"{html_text(text)}</div>"
    )


def row_html(
    name: str,
    args: dict[str, Any] | None,
    status: str | None,
    output: str,
    duration_ms: float | None,
    *,
    missing: str = NOT_RUN,
) -> str:
    """One call as a `<details>` row; `status` None: said as `missing`; `args` None: unknown."""
    shown = "" if args is None else "<small>arguments</small>" + pre_html(pretty(args))
    if status is None:
        title = f"⏸ {visible(name)} · {missing}"
        body = shown
    else:
        status = call_outcome(name, status, output)
        mark = _OUTCOME[status][2] if status in _OUTCOME else "•"
        title = f"{mark} {visible(name)} · {_word(name, status, output, duration_ms)}"
        body = shown + "<small>output</small>" + pre_html(clip(output) or "(no output)")
    return f'<details class="gh-tool"><summary>{html.escape(title)}</summary>{body}</details>'


def not_run_row(
    name: str, status: str, output: str, args: dict[str, Any] | None = None, slot: Any = None
) -> None:
    """A live call that ended without running, drawn (in `slot`, or here) as in the history."""
    (slot or st).markdown(row_html(name, args, status, output, None), unsafe_allow_html=True)


class ToolBlock:
    """One live call's status block; its output is buffered and flushed by the caller."""

    def __init__(self, name: str, args: dict[str, Any], tool: str = "") -> None:
        self.name, self.args, self.tool = name, args, tool or name
        # The block's place, so a call that ends without running can be redrawn as a row.
        self.slot = st.empty()
        self.box = self.slot.status(label(name, None, None), state="running", expanded=True)
        with self.box:
            st.caption("arguments")
            st.code(pretty(args), language="json")
            self._out = st.empty()
        self.output = ""
        self.dirty = False

    def add_output(self, text: str) -> None:
        self.output += text
        self.dirty = True

    def flush(self) -> None:
        if self.dirty:
            self._out.code(clip(self.output), language="text")
            self.dirty = False

    def finish(self, status: str, output: str, duration_ms: float | None) -> None:
        if status in NOT_RUN_STATUSES:
            not_run_row(self.name, status, output or self.output, self.args, slot=self.slot)
            return
        if output:
            self.output = output
            self.dirty = True
        self.flush()
        status = call_outcome(self.tool, status, self.output)
        self.box.update(
            label=label(self.name, status, duration_ms, self.output, self.tool),
            state=_OUTCOME[status][0] if status in _OUTCOME else "complete",
            expanded=False,
        )


def result_row(
    thread_id: str,
    call: ToolCallView,
    result: MessageView,
    duration_ms: float | None,
    decided: DecisionRecord | None = None,
) -> str:
    """A finished call's row: who let it run (`decided`: its record), a link to offloaded output."""
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
        query = urlencode({"view": "output", "thread": thread_id, "call": call.id})
        size = f" ({result.total_chars:,} characters)" if result.total_chars else ""
        link = (
            f'<a href="?{html.escape(query)}" target="_blank" rel="noopener">'
            f"Show whole output{size} ↗</a> <small>(the model got the head above, and reads on on demand)</small>"
        )
        row = row.removesuffix("</details>") + f"<p>{link}</p></details>"
    return row


SUMMARY_MARKER = "The model's view was summarised here"


def summary_html(text: str) -> str:
    return (
        f'<details class="gh-tool gh-compacted"><summary>⇣ {SUMMARY_MARKER}: from here on '
        "the model gets this summary instead of the turns above (they stay in your history)</summary>"
        f'<div style="white-space: pre-wrap">{html_text(text.strip())}</div></details>'
    )
