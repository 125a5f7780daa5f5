"""The interactive `gatehouse chat` loop: read a line, run it, ask for decisions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.text import Text

from gatehouse.graph import DecisionError, OutcomeUnknown, Run, RunInProgress, Session
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol import operations as ops
from gatehouse.graph.protocol.answers import OutcomeAnswer, ReviewAnswer
from gatehouse.graph.protocol.threads import turn_starts
from gatehouse.ui.term import ask
from gatehouse.ui.term import render as term

# Turns printed when a thread is resumed (`gatehouse chat --thread ID`); --all prints every one.
RESUME_TURNS = 5

HELP = """Type a message to the agent. Commands:
  /help      this help
  /history   show the whole thread so far
  /retry     continue the thread after a failed or interrupted run, or ask again after a cut-off reply
  /undo      drop the last turn (the history stays in the checkpoints)
  /compact   summarise the older turns now
  /auto      show auto-approve; /auto on|off for this session, /auto thread on|off for this thread
             (while on, calls that would ask run without asking; deny rules still apply)
  /new       start a new thread
  /exit      leave (Ctrl-C or Ctrl-D at the prompt do the same)
During a run, Ctrl-C stops it at the next safe point; the thread stays consistent."""


@dataclass
class Chat:
    session: Session
    out: Console
    err: Console
    check_args: Callable[[str, dict[str, Any]], str | None]
    drive: Callable[[Run, term.EventRenderer | None], tuple[str, list[Any]]]
    thread_id: str = ""
    whole_history: bool = False  # --all: resuming prints every turn, not RESUME_TURNS

    def __post_init__(self) -> None:
        self.asker = ask.Asker(self.out)

    def loop(self, thread_id: str | None) -> int:
        """Returns the exit code: 3 when leaving the thread waiting for a decision."""
        self.start(thread_id)
        try:
            self.decide_pending()
            while True:
                # The prompt says so while auto-approve is on: no call will be asked about.
                auto = self.session.view(self.thread_id).auto_approving
                text = self.asker.line("you [auto-approve] ▸ " if auto else "you ▸ ").strip()
                if not text:
                    continue
                if text.startswith("/"):
                    if not self.command(text):
                        return self.leave()
                    continue
                try:
                    run = self.session.submit(ops.SendMessage(self.thread_id, text))
                except (ValueError, RunInProgress) as exc:
                    self.err.print(Text(str(exc), "red"))
                    continue
                self.run(run)
                self.decide_pending()
        except (KeyboardInterrupt, EOFError):
            self.out.print()
            return self.leave()

    def start(self, thread_id: str | None) -> None:
        model, db = self.session.info.get("model", ""), self.session.info.get("db", "")
        self.out.print(Text.assemble(("Gatehouse", "bold"), f" · {model}", (f" · {db}", "dim")))
        if thread_id:
            self.thread_id = thread_id
            self.out.print(Text.assemble("thread ", (thread_id, "bold")))
            self.history(whole=self.whole_history)
            last = self.session.view(thread_id).info
            if last and last.status in ("failed", "interrupted"):
                why = f" ({last.reason})" if last.reason else ""
                ended = f"The last run ended as {last.status!r}{why}; type /retry to continue it."
                self.out.print(Text(ended, "yellow"))
        else:
            self.new_thread()
        resume = f"Resume later with: gatehouse chat --thread {self.thread_id}"
        self.out.print(Text(f"{resume}   (/help for commands)", "dim"))
        self.show_auto_approve()

    def new_thread(self) -> None:
        self.thread_id = self.session.new_thread_id()
        self.out.print(Text.assemble("new thread ", (self.thread_id, "bold")))

    def show_auto_approve(self, *, off_too: bool = False) -> None:
        if why := self.session.view(self.thread_id).auto_approving:
            self.out.print(term.auto_approve_banner(why))
        elif off_too:
            off = "auto-approve is off: calls that need approval ask you first."
            self.out.print(Text(off, "dim"))

    def auto_command(self, args: list[str]) -> None:
        """/auto [on|off] (this session) or /auto thread on|off (this thread, stored)."""
        scope = "thread" if args[:1] == ["thread"] else "session"
        value = (args[1:] if scope == "thread" else args)[:1]
        if value and value[0] not in ("on", "off"):
            self.err.print(Text("usage: /auto [on|off] or /auto thread on|off", "red"))
            return
        if value:
            thread_id = self.thread_id if scope == "thread" else None
            auto = ops.SetAutoApprove(thread_id, value[0] == "on")
            self.session.submit(auto, ops.RunOptions(source="terminal"))
        self.show_auto_approve(off_too=True)

    def history(self, *, whole: bool = True) -> None:
        """The thread so far; unless `whole`, its last RESUME_TURNS turns (a 300-turn
        thread would print thousands of lines) and how to see the rest."""
        messages = self.session.view(self.thread_id).transcript
        if not messages:
            return
        starts = turn_starts(messages)
        first = 0 if whole or len(starts) <= RESUME_TURNS else starts[-RESUME_TURNS]
        if first:
            hidden = len(starts) - RESUME_TURNS
            more = (
                f"… {hidden} earlier turn{'s' if hidden != 1 else ''} not shown (/history, "
                f"gatehouse chat --thread {self.thread_id} --all, or gatehouse show {self.thread_id})"
            )
            self.out.print(Text(more, "dim"))
        decisions = self.session.view(self.thread_id).audit(max(50, len(messages)))
        term.render_transcript(self.out, messages, numbered=True, first=first, decisions=decisions)

    def leave(self) -> int:
        waiting = bool(self.thread_id) and self.session.view(self.thread_id).pending is not None
        note = " (waiting for a decision)" if waiting else ""
        if self.session.view(self.thread_id).exists:
            bye = f"Bye. Thread {self.thread_id}{note}: gatehouse chat --thread {self.thread_id}"
            self.out.print(Text(bye, "dim"))
        return 3 if waiting else 0

    def command(self, text: str) -> bool:
        """Handle a /command; False means leave."""
        name, *args = text.split()
        name = name.lower()
        if name in ("/exit", "/quit", "/q"):
            return False
        try:
            if name == "/help":
                self.out.print(Text(HELP))
            elif name == "/history":
                self.history()
            elif name == "/auto":
                self.auto_command(args)
            elif name == "/new":
                self.new_thread()
                self.show_auto_approve()
            elif name == "/undo":
                removed = self.session.submit(ops.Undo(self.thread_id)).result().removed
                self.out.print(Text(f"undone: {removed} message(s) removed", "dim"))
            elif name == "/compact":
                event = self.session.submit(ops.Compact(self.thread_id)).result().compacted
                said = term.compacted_line(event) if event else "nothing old enough to compact"
                self.out.print(Text(said, "dim"))
            elif name == "/retry":
                if self.session.view(self.thread_id).pending is None:
                    self.run(self.session.submit(ops.Retry(self.thread_id)))
                self.decide_pending()
            else:
                self.err.print(Text(f"unknown command {name}; /help lists them", "red"))
        except (ValueError, RunInProgress) as exc:  # an AwaitingDecision is a ValueError
            self.err.print(Text(str(exc), "red"))
        return True

    def run(self, run: Run) -> None:
        renderer = term.EventRenderer(self.out)
        status, events = self.drive(run, renderer)
        if (u := renderer.usage) is not None:
            self.out.print(Text(f"tokens: {u.input_tokens} in · {u.output_tokens} out", "dim"))
        if status == "failed":
            self.out.print(
                Text("Type /retry to try the run again from its last checkpoint.", "yellow")
            )
        elif status == "stopped" and any(
            isinstance(e, ev.Notice) and e.source == ev.CUT_OFF_SOURCE for e in events
        ):
            self.out.print(Text("Type /retry to ask the model again.", "yellow"))

    def decide_pending(self) -> None:
        """Ask for decisions while the thread is paused. Ctrl-C here propagates (leave)."""
        while (pending := self.session.view(self.thread_id).pending) is not None:
            answer: ReviewAnswer | OutcomeAnswer
            if isinstance(pending, OutcomeUnknown):
                answer = ask.ask_outcome(self.out, self.asker, pending)
            else:
                answer = ask.ask_decisions(
                    self.out, self.asker, pending, self.check_args, self.session.preview
                )
            try:
                run = self.session.submit(ops.Decide(self.thread_id, answer, pending.interrupt_id))
            except DecisionError as exc:
                self.err.print(Text(f"decision refused, nothing changed: {exc}", "red"))
                continue
            self.run(run)
