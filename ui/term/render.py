"""Terminal rendering (rich) for the `gatehouse` CLI. Text from the model, tools or people
is printed as `Text`, never markup, and through `visible()` first: an escape sequence or
a bidi override is shown, never obeyed (`SafeConsole` is the net for anything missed)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, assert_never

from rich.cells import cell_len
from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from gatehouse.graph import DecisionRecord, MessageView, OutcomeUnknown, Pause
from gatehouse.graph.protocol.display import Shown, shown, visible, visible_json
from gatehouse.graph.protocol.messages import call_outcome, exit_note
from gatehouse.graph.protocol.threads import turn_starts
from gatehouse.graph.protocol.wording import RUN_ENDED, decided
from gatehouse.ui.term.card_json import pending_json, pending_rows  # (term.pending_json)
from gatehouse.ui.term.console import STATUS_STYLE, when

PRINT_BATCH = 256  # lines of a transcript per `console.print`
E = TypeVar("E")

if TYPE_CHECKING:
    from gatehouse.graph.protocol import events as ev

OUTPUT_PREVIEW_LINES = 8
THINKING = "dim italic"
# Shown on every call that ran because auto-approve was on, and in the banner.
AUTO_MARK = "[auto-approved]"
AUTO_STYLE = "bold yellow"
TOOL_MARK = {
    "ok": ("✓", "green"),
    "error": ("✗", "red"),
    "rejected": ("✗", "yellow"),
    "denied": ("⛔", "red"),
    "responded": ("↩", "cyan"),
    "stopped": ("■", "magenta"),
}


def clip(text: str, lines: int = OUTPUT_PREVIEW_LINES) -> str:
    rows = visible(text).rstrip("\n").split("\n")
    more = f"\n… ({len(rows) - lines} more lines)" if len(rows) > lines else ""
    return "\n".join(rows[:lines]) + more


def aside(event: ev.Compacted | ev.Notice | ev.ReplyRejected | ev.ModelRetried) -> str:
    from gatehouse.graph.protocol import events as ev

    match event:
        case ev.Compacted():
            return f"(history compacted: {event.tokens_before} → {event.tokens_after} tokens)"
        case ev.Notice():
            mark = "⚠" if event.source == ev.CUT_OFF_SOURCE else "ℹ"
            return f"{mark} {visible(event.text)}"
        case ev.ReplyRejected():
            return f"↺ reply sent back ({visible(event.reason)}); the text above is dropped, asking again."
        case ev.ModelRetried():
            dropped = "; the partial reply above is dropped" if event.message_id else ""
            return (
                f"↻ {visible(event.reason)} Retrying in {event.delay_s:.1f} s "
                f"(retry {event.attempt} of {event.max_retries}){dropped}."
            )
        case _:
            assert_never(event)


class EventRenderer:
    """Prints a run's events as they arrive: streamed text, tool progress, problems."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._stream: str | None = None  # "text" or "reasoning" while a delta line is open
        self._names: dict[str, str] = {}
        self._streamed: set[str] = set()  # calls whose output was shown as it came
        self.usage: ev.Usage | None = None
        # The reply streaming now and its text so far: an after_llm hook may replace it.
        self._reply_id: str | None = None
        self._reply_text = ""

    def _erase(self, event: ev.MessageReplaced) -> bool:
        """On a terminal, replace the reply just streamed in place (cursor up over its rows,
        clear, print the kept text); False when not a terminal or something came after it."""
        c = self.console
        if not c.is_terminal or self._stream != "text" or event.message_id != self._reply_id:
            return False
        width = max(c.width, 1)
        rows = sum(max(1, -(-cell_len(line) // width)) for line in self._reply_text.split("\n"))
        c.file.write("\r" + (f"\x1b[{rows - 1}A" if rows > 1 else "") + "\x1b[J")
        c.file.flush()
        self._reply_text = "" if event.removed else visible(event.text)
        if self._reply_text:
            c.print(Text(self._reply_text), end="", soft_wrap=True)
        else:
            self._stream = None
        c.file.flush()
        return True

    def _break(self) -> None:
        if self._stream is not None:
            self.console.print()
            self._stream = None

    def _delta(self, kind: str, text: Text) -> None:
        c = self.console
        if self._stream != kind:
            self._break()
            if kind == "reasoning":
                # Labelled as well as dimmed: pipes and NO_COLOR show no dimming.
                c.print(Text("thinking ▸ ", THINKING), end="")
        # Not wrapped by rich (each delta would be wrapped as if it began a line): the
        # terminal wraps the text as it is, so the rows a reply takes are known (`_erase`).
        c.print(text, end="", soft_wrap=True)
        c.file.flush()
        self._stream = kind

    def handle(self, event: ev.Event) -> None:
        # Imported here: the read-only commands draw no events (and skip building them).
        from gatehouse.graph.protocol import events as ev

        match event:
            case ev.TextDelta():
                if event.message_id != self._reply_id or self._stream != "text":
                    self._reply_id, self._reply_text = event.message_id, ""
                # What was printed (escaped), so an erase counts the rows it really took.
                self._reply_text += visible(event.text)
                self._delta("text", Text(visible(event.text)))
            case ev.ReasoningDelta():
                self._delta("reasoning", Text(visible(event.text), THINKING))
            case ev.Usage():
                self.usage = event
            case (
                ev.RunStarted()
                | ev.PartStarted()
                | ev.AssistantMessage()
                | ev.TurnComplete()
                | ev.ApprovalRequired()
                | ev.Done()
            ):
                pass  # the deltas and tool lines say it; the card is shown by whoever asks
            case ev.MessageReplaced():
                if not self._erase(event):
                    self._break()
                    self._replaced(event)
            case ev.ToolStarted():
                self._break()
                self._tool_started(event)
            case ev.ToolOutput():
                self._break()
                # Calls run in parallel: each streamed line says whose it is.
                self._streamed.add(event.call_id)
                name = self._names.get(event.call_id, "tool")
                for piece in visible(event.text).rstrip("\n").split("\n"):
                    self.console.print(Text.assemble((f"{name} │ ", "cyan"), (piece, "dim")))
            case ev.ToolFinished():
                self._break()
                self._tool_finished(event)
            case ev.Compacted() | ev.Notice() | ev.ReplyRejected() | ev.ModelRetried():
                self._break()
                self.console.print(Text(aside(event), "yellow"))
            case ev.ErrorEvent():
                self._break()
                self.console.print(Text(f"error: {visible(event.message)}", "red bold"))
            case ev.RunFinished():
                self._break()
                self.finished(event)
            case _:
                assert_never(event)

    def _tool_started(self, event: ev.ToolStarted) -> None:
        self._names[event.call_id] = event.name
        line = call_line("⚙ ", event.name, event.args)
        if event.auto_approved:
            line.append(f" {AUTO_MARK}", AUTO_STYLE)
        elif event.grant:
            line.append(f" [always allowed ({event.grant})]", AUTO_STYLE)
        self.console.print(line)

    def _tool_finished(self, event: ev.ToolFinished) -> None:
        c = self.console
        status = call_outcome(event.name, event.status, event.output)
        mark, style = TOOL_MARK.get(status, ("•", ""))
        note = exit_note(event.name, event.output)
        head = Text.assemble(
            (f"{mark} ", style), (visible(event.name), "bold"), (f" {status}{note}", style)
        )
        if event.duration_ms:
            head.append(f" ({event.duration_ms:.0f} ms)", "dim")
        c.print(head)
        if event.output.strip() and event.call_id not in self._streamed:
            c.print(Text(clip(event.output), style="dim"))
        if event.offloaded:
            whole = f"Whole: gatehouse output {event.thread_id} {event.call_id})"
            stored = f"  (output stored aside: {event.total_chars or 0:,} characters; the model got"
            c.print(Text(f"{stored} the start. {whole}", "dim"))

    def _replaced(self, event: ev.MessageReplaced) -> None:
        # Printed text cannot be taken back in a pipe or a log: say so and show the kept text.
        kept = "changed by a hook; kept as:"
        how = "removed by a hook (not kept in the history)." if event.removed else kept
        self.console.print(Text(f"↺ the reply above was {how}", "yellow"))
        if not event.removed:
            self.console.print(Text(visible(event.text)))

    def finished(self, event: ev.RunFinished) -> None:
        if event.status == "completed":
            return
        words = RUN_ENDED[event.status]
        label = words if event.status == "awaiting_approval" else f"run {words}"
        text = Text(f"■ {label}", STATUS_STYLE.get(event.status, ""))
        if event.reason:
            text.append(f": {visible(event.reason)}")
        self.console.print(text)


def auto_approve_banner(why: str) -> Text:
    """The line shown while auto-approve is on ("session" or "thread")."""
    scope = "this session" if why == "session" else "this thread"
    return Text.assemble(
        ("⚠ AUTO-APPROVE ON", "bold black on yellow"),
        f" for {scope}: calls that would ask for approval run without asking "
        "(deny rules still apply; each is recorded as auto-approved).",
    )


def run_json(
    thread_id: str,
    status: str,
    events: list[ev.Event],
    pending: Pause | None,
    auto_approve: str | None,
) -> dict[str, Any]:
    """What `--json` prints for a run a command drove."""
    from gatehouse.graph.protocol import events as ev

    def of(kind: type[E]) -> list[E]:
        return [e for e in events if isinstance(e, kind)]

    finished = next(iter(of(ev.RunFinished)[-1:]), None)
    auto = {e.call_id for e in of(ev.ToolStarted) if e.auto_approved}
    granted = {e.call_id: e.grant for e in of(ev.ToolStarted) if e.grant}
    errors = of(ev.ErrorEvent)
    return {
        "thread_id": thread_id,
        "status": status,
        "reason": finished.reason if finished else None,
        "text": "".join(e.text for e in of(ev.TextDelta)),
        "final_text": finished.text if finished else None,
        "message_id": finished.message_id if finished else None,
        "tools": [
            {
                **pick(e, "call_id", "name", "status", "output"),
                "auto_approved": e.call_id in auto,
                "grant": granted.get(e.call_id),
                **({"offloaded": True, "total_chars": e.total_chars} if e.offloaded else {}),
            }
            for e in of(ev.ToolFinished)
        ],
        "auto_approve": auto_approve,
        "compacted": [pick(e, *COMPACTED) for e in of(ev.Compacted)],
        "errors": [e.message for e in errors],
        "failure": pick(errors[0], "message", "kind", "retryable") if errors else None,
        "reasoning": "".join(e.text for e in of(ev.ReasoningDelta)),
        "notices": [pick(e, "text", "source") for e in of(ev.Notice)],
        "retries": [
            pick(e, "attempt", "max_retries", "delay_s", "reason") for e in of(ev.ModelRetried)
        ],
        "pending": pending_json(pending) if pending else None,
    }


COMPACTED = ("tokens_before", "tokens_after", "messages_removed")


def pick(obj: object, *names: str) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


def compacted_line(event: ev.Compacted) -> str:
    return (
        f"compacted: {event.messages_removed} messages summarised, "
        f"{event.tokens_before:,} → {event.tokens_after:,} tokens"
    )


def diff_style(line: str) -> str:
    return "red" if line.startswith("-") else "green" if line.startswith("+") else "dim"


def approvers_of(
    messages: list[MessageView], decisions: Sequence[DecisionRecord]
) -> dict[str, str]:
    """call id -> "approved by alice via web" for each call of `messages` a person let
    run, from the decision log; a call that only shares an id with a decided one (models
    reuse ids) is not credited."""
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
    found: dict[str, str] = {}
    for record in sorted(decisions, key=lambda r: r.decided_at):  # the latest wins
        call = calls.get(record.tool_call_id)
        if (
            call is not None
            and record.runs
            and record.decision != "auto_approve"
            and (record.binds(call.to_dict()) or record.binds(call.to_dict(), as_run=True))
        ):
            found[call.id] = (
                f"{decided(record.decision)} by {record.actor or 'unknown'} via {record.source or 'unknown'}"
            )
    return found


def render_transcript(
    console: Console,
    messages: list[MessageView],
    *,
    numbered: bool = False,
    first: int = 0,
    decisions: Sequence[DecisionRecord] = (),
) -> None:
    """`numbered`: the person's messages show their turn number (#N, as `fork --at N`
    takes); `decisions` credit each call a person let run. Printed PRINT_BATCH lines at a
    time: each `console.print` measures and flushes (10,000 messages: 1.2 s -> 0.85 s)."""
    turns = {i: k + 1 for k, i in enumerate(turn_starts(messages))}
    approvals = approvers_of(messages, decisions)
    lines: list[Text] = []
    for n, m in enumerate(messages[first:], first):
        lines.extend(_message_lines(m, f"#{turns.get(n, '?')} " if numbered else "", approvals))
        if len(lines) >= PRINT_BATCH:
            console.print(Group(*lines))
            lines.clear()
    if lines:
        console.print(Group(*lines))


SUMMARY_NOTE = (
    "the model's view was summarised here; it gets this in place of the "
    "turns above (they stay in the history)\n"
)


def _message_lines(m: MessageView, number: str, approvals: dict[str, str]) -> Iterator[Text]:
    if m.role == "user" and m.summary:
        yield Text.assemble(
            ("summary ▸ ", "bold magenta"), (SUMMARY_NOTE, "magenta"), (clip(m.content, 6), "dim")
        )
    elif m.role == "user":
        yield Text.assemble((number, "dim"), ("you ▸ ", "bold blue"), visible(m.content))
    elif m.role == "assistant":
        if m.reasoning:
            yield Text.assemble(("thinking ▸ ", THINKING), (clip(m.reasoning, 6), THINKING))
        if m.content:
            yield Text.assemble(("agent ▸ ", "bold green"), visible(m.content))
        if m.cut_off:
            yield Text("  ⚠ cut off: this reply ended before it was finished", "yellow")
        for call in m.tool_calls:
            yield call_line("  ⚙ ", call.name, call.args)
    elif m.role == "tool":
        mark, style = TOOL_MARK.get(m.outcome, ("•", ""))
        who = approvals.get(m.tool_call_id or "")
        auto = (f"[{m.without_a_click}] ", AUTO_STYLE) if m.without_a_click else ""
        name, note = (visible(m.name or "tool"), "bold"), (exit_note(m.name, m.content), style)
        yield Text.assemble(
            (f"  {mark} ", style),
            name,
            note,
            ": ",
            auto or ((f"[{who}] ", "dim") if who else ""),
            (clip(m.content, 4), "dim"),
        )
        if m.offloaded:
            whole = f"whole: gatehouse output … {m.tool_call_id})"
            yield Text(
                f"    (output stored aside: {m.total_chars or 0:,} characters; {whole}", "dim"
            )
    else:
        yield Text(f"{m.role}: {visible(m.content)}", "dim")


def call_line(prefix: str, name: str, args: Any) -> Text:
    return Text.assemble(
        (prefix, "cyan"), (visible(name), "bold"), " ", (visible_json(args), "dim")
    )


def render_audit(
    console: Console, records: list[DecisionRecord], *, show_thread: bool = True
) -> None:
    for r in records:
        style = "green" if r.runs else "yellow"
        who = " · ".join(x for x in (r.actor, r.source) if x) or "unknown"
        head = Text.assemble((when(r.decided_at), "dim"), "  ")
        if show_thread:
            head.append(r.thread_id[:8] + "  ", "dim")
        head.append(visible(r.tool), "bold")
        head.append(f"  {decided(r.decision)}", style)
        head.append(f"  by {visible(who)}", "cyan")
        if r.question != "review":
            head.append(f"  ({r.question})", "dim")
        console.print(head)
        console.print(
            Text(f"    call {visible(r.tool_call_id or '-')} {visible_json(r.args)}", "dim")
        )
        if r.always_allow:
            console.print(Text(f"    always allow: {visible(r.always_allow)}", "yellow"))
        if r.message:
            console.print(Text.assemble("    note: ", visible(r.message)))
        if diff := r.diff():
            for line in visible(diff).split("\n"):
                console.print(Text("    " + line, diff_style(line)))


def render_outcome(console: Console, pending: OutcomeUnknown) -> None:
    """The card, then the description outside it (pipes do not wrap inside a panel)."""
    call = pending.call
    body = Text(visible_json(call.args))
    body.append(f"\nstarted {when(call.started_at)}", "dim")
    if call.attempts > 1:
        body.append(f" · {call.attempts} attempts", "dim")
    title = Text.assemble(("outcome unknown: ", "red bold"), (visible(call.name), "bold"))
    subtitle = "run again, mark failed, respond"
    console.print(_card(body, title=title, subtitle=subtitle, border_style="red"))
    if pending.request.description:
        console.print(Text(visible(pending.request.description), "yellow"))


# A card: a call in a box, its title at the top left, what may be decided at the bottom right.
_card = partial(Panel, title_align="left", subtitle_align="right")


# A terminal card shows at most this much of a call's arguments and of its preview
# (the one card rule, gatehouse.graph.protocol.display.shown); `v` pages through all of it.
CARD_LINES = 20
CARD_CHARS = 2_000


def call_texts(row: dict[str, Any]) -> list[str]:
    """What a card draws of a call: its arguments, then its preview."""
    return [visible_json(row["args"])] + ([row["preview"]] if row.get("preview") else [])


def card_parts(row: dict[str, Any]) -> list[Shown]:
    return [shown(t, CARD_LINES, CARD_CHARS) for t in call_texts(row)]


def call_card(row: dict[str, Any], total: int, more: str = "v to view all") -> Panel:
    """A call as the terminal shows it; `more` says how to see what the card hides."""
    body = Text()
    for n, part in enumerate(card_parts(row)):
        if n:
            body.append("\n\n")
        body.append(part.head, "dim" if n else "")
        if not part.complete:
            body.append(f"\n… {part.hidden} — {more}", "bold yellow")
    title = Text.assemble(f"call {row['call']}/{total}: ", (visible(row["name"]), "bold"))
    if row.get("risk"):
        title.append(f"  risk: {row['risk']}", "yellow")
    return _card(body, title=title, subtitle=", ".join(row["allowed"]), border_style="yellow")


def render_pending(console: Console, pending: Pause, title: str | None = None) -> None:
    head = Text.assemble(("⏸ ", "yellow"), ("thread ", ""), (visible(pending.thread_id), "bold"))
    if title:
        head.append(f"  {visible(title)}", "dim")
    console.print(head)
    rid = visible(pending.interrupt_id)
    decide = (f"  (decide with --interrupt-id {rid})", "dim")
    console.print(Text.assemble(("  request ", "dim"), (rid, "bold"), decide))
    if isinstance(pending, OutcomeUnknown):
        render_outcome(console, pending)
        return
    rows = pending_rows(pending)
    for row in rows:
        console.print(call_card(row, len(rows), "--json prints all of it"))
