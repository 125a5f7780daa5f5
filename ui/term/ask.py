"""The terminal's prompts (prompt_toolkit on a terminal, plain lines otherwise, so
pipes and cron work too): a person's decisions on a pending request, and the outcome
of a call a crash cut off, built into the answers the Session takes.

Apart from ui/term/render.py because the answers are pydantic models: `pending` and
`show` draw pauses and never ask, and load no pydantic.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from graph import Approval, OutcomeUnknown
from graph.protocol.answers import Decision, OutcomeAnswer, ReviewAnswer
from graph.protocol.display import visible, visible_json
from graph.protocol.operations import approve, edit, outcome, reject, respond, review
from ui.term.render import call_card, pending_rows, render_outcome

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.validation import Validator


class Asker:
    """One line of input: prompt_toolkit on a terminal, `input()` otherwise.
    Ctrl-C raises KeyboardInterrupt and Ctrl-D EOFError in both cases."""

    def __init__(self, console: Console, *, interactive: bool | None = None) -> None:
        self.console = console
        self.interactive = (
            sys.stdin.isatty() and sys.stdout.isatty() if interactive is None else interactive
        )
        self._session: PromptSession[str] | None = None
        if self.interactive:
            # Imported here: prompt_toolkit takes a third of a second to import, which
            # the read-only commands (threads, pending, show) must not pay.
            from prompt_toolkit import PromptSession

            self._session = PromptSession()

    def line(
        self, message: str, *, default: str = "", check: Callable[[str], str | None] | None = None
    ) -> str:
        while True:
            if self._session is not None:
                # PromptSession keeps arguments passed as None from the previous prompt,
                # so every prompt passes its own validator (a no-op one included).
                validator = check_validator(check or (lambda _text: None))
                text = self._session.prompt(
                    message, default=default, validator=validator, validate_while_typing=False
                )
            else:
                self.console.print(message, end="", markup=False)
                self.console.file.flush()
                raw = sys.stdin.readline()
                if not raw:
                    raise EOFError
                text = raw.rstrip("\n") or default
            problem = check(text) if check else None
            if problem is None:
                return text
            self.console.print(Text(problem, "red"))


def check_validator(check: Callable[[str], str | None]) -> Validator:
    """A prompt_toolkit validator that keeps the prompt open and shows the checker's
    own message while input is wrong."""
    from prompt_toolkit.document import Document
    from prompt_toolkit.validation import ValidationError, Validator

    class CheckValidator(Validator):
        def validate(self, document: Document) -> None:
            problem = check(document.text)
            if problem:
                raise ValidationError(message=problem, cursor_position=len(document.text))

    return CheckValidator()


# key: (decision type it needs allowed, menu label, help line)
CHOICES = {
    "a": ("approve", "approve", "approve"),
    "e": ("edit", "edit", "edit the arguments ($EDITOR when set, else inline JSON)"),
    "r": ("reject", "reject", "reject, with a reason"),
    "s": ("respond", "respond", "respond: your text becomes the tool result"),
    "A": ("approve", "all", "approve this and all remaining calls"),
    "w": ("approve", "always", "approve and always allow this tool in this thread"),
}


def choice_problem(text: str, keys: list[str]) -> str | None:
    """None for a valid key; else what to type (the full help for `?`)."""
    text = text.strip()
    if text in keys:
        return None
    if text == "?":
        return "\n".join(f"{k}: {CHOICES[k][2]}" for k in keys)
    return f"type one of: {' '.join(keys)} (? for help)"


def parse_args_json(
    text: str, name: str, check_args: Callable[[str, dict[str, Any]], str | None]
) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, "the arguments must be a JSON object"
    problem = check_args(name, value)
    return (None, problem) if problem else (value, None)


def ask_decisions(
    console: Console,
    asker: Asker,
    pending: Approval,
    check_args: Callable[[str, dict[str, Any]], str | None],
) -> ReviewAnswer:
    """Ask for one decision per call, in request order; returns the whole answer."""
    rows = pending_rows(pending)
    decisions: list[Decision] = []
    approve_rest = False
    for row in rows:
        allowed = row["allowed"]
        if approve_rest and "approve" in allowed:
            console.print(
                Text.assemble(
                    ("✓ approved ", "green"),
                    (f"call {row['call']} ({visible(row['name'])})", "bold"),
                )
            )
            decisions.append(approve())
            continue
        console.print(call_card(row, len(rows)))
        keys = [k for k, (kind, _, _) in CHOICES.items() if kind in allowed]
        console.print(Text("  ".join(f"[{k}] {CHOICES[k][1]}" for k in keys), "dim"))
        key = asker.line("decision> ", check=functools.partial(choice_problem, keys=keys)).strip()
        if key == "a":
            decisions.append(approve())
        elif key == "A":
            decisions.append(approve())
            approve_rest = True
        elif key == "w":
            decisions.append(approve(always_allow=True))
        elif key == "r":
            reason = asker.line("reason> ").strip()
            decisions.append(reject(reason or None))
        elif key == "s":
            message = asker.line(
                "response> ", check=lambda t: None if t.strip() else "a response cannot be empty"
            )
            decisions.append(respond(message.strip()))
        elif key == "e":
            decisions.append(edit(row["name"], edit_args(console, asker, row, check_args)))
    return review(decisions)


# key: (outcome answer it needs allowed, menu label, help line)
OUTCOME_CHOICES = {
    "a": ("run_again", "run again", "run the call again (may repeat its side effect)"),
    "f": ("mark_failed", "mark failed", "mark it as failed, with an optional note for the model"),
    "s": ("respond", "respond", "respond with what really happened (becomes the tool result)"),
}


def outcome_choice_problem(text: str, keys: list[str]) -> str | None:
    text = text.strip()
    if text in keys:
        return None
    if text == "?":
        return "\n".join(f"{k}: {OUTCOME_CHOICES[k][2]}" for k in keys)
    return f"type one of: {' '.join(keys)} (? for help)"


def ask_outcome(console: Console, asker: Asker, pending: OutcomeUnknown) -> OutcomeAnswer:
    """Ask how an outcome-unknown call ended; returns the answer to submit."""
    render_outcome(console, pending)
    allowed = pending.allowed
    keys = [k for k, (kind, _, _) in OUTCOME_CHOICES.items() if kind in allowed]
    console.print(Text("  ".join(f"[{k}] {OUTCOME_CHOICES[k][1]}" for k in keys), "dim"))
    while True:
        key = asker.line("outcome> ", check=lambda t: outcome_choice_problem(t, keys)).strip()
        if key == "a":
            name = pending.call.name
            console.print(
                Text(
                    f"Running {name} again may repeat its side effect if the first attempt did its work.",
                    "yellow",
                )
            )
            if asker.line("run it again? [y/N] ").strip().lower() in ("y", "yes"):
                return outcome("run_again")
            continue
        if key == "f":
            return outcome("mark_failed", asker.line("note (optional)> ").strip() or None)
        text = asker.line(
            "what really happened> ",
            check=lambda t: None if t.strip() else "the outcome cannot be empty",
        )
        return outcome("respond", text.strip())


def edit_args(
    console: Console,
    asker: Asker,
    row: dict[str, Any],
    check_args: Callable[[str, dict[str, Any]], str | None],
) -> dict[str, Any]:
    name = row["name"]
    text = visible_json(row["args"], indent=2)  # hidden characters as JSON escapes: same value
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor and asker.interactive:
        while True:
            text = run_editor(editor, text)
            args, problem = parse_args_json(text, name, check_args)
            if args is not None:
                return args
            console.print(Text(f"{visible(problem or '')} — reopening the editor", "red"))
    line = asker.line(
        "args (JSON)> ",
        default=visible_json(row["args"]),
        check=lambda t: parse_args_json(t, name, check_args)[1],
    )
    args, _ = parse_args_json(line, name, check_args)
    assert args is not None
    return args


def run_editor(editor: str, text: str) -> str:
    """Edit `text` in the person's editor; returns the saved text."""
    with tempfile.NamedTemporaryFile(
        "w", suffix=".json", prefix="gatehouse-args-", delete=False
    ) as f:
        f.write(text)
    try:
        # Through the shell, like git does: $EDITOR may carry flags ("code --wait").
        subprocess.run(f'{editor} "{f.name}"', shell=True, check=False)
        return Path(f.name).read_text()
    finally:
        os.unlink(f.name)
