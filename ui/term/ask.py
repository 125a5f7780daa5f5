"""The terminal's prompts for a person's decisions and a cut-off call's outcome; apart
from render.py because answers are pydantic models (`pending` and `show` load none)."""

from __future__ import annotations

import difflib
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import chop_cells
from rich.console import Console
from rich.text import Text

from gatehouse.graph import Approval, OutcomeUnknown
from gatehouse.graph.protocol.answers import Decision, OutcomeAnswer, ReviewAnswer
from gatehouse.graph.protocol.confirm import confirmation
from gatehouse.graph.protocol.display import visible, visible_json, whole
from gatehouse.graph.protocol.grant_scope import narrow_grant, whole_tool
from gatehouse.graph.protocol.operations import approve, edit, outcome, reject, respond, review
from gatehouse.ui.term import render

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.validation import Validator

# A tool's check of call arguments (or its preview of them): a problem (a preview), or None.
Check = Callable[[str, dict[str, Any]], str | None]


class Asker:
    """One line of input: prompt_toolkit on a terminal, stdin otherwise; Ctrl-C raises
    KeyboardInterrupt and Ctrl-D EOFError in both."""

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
    "A": ("approve", "all", "approve this and all remaining calls (each is shown first)"),
    "w": ("approve", "always this", "approve, and always allow exactly this call in this thread"),
    "W": ("approve", "always tool", "approve, and always allow the whole tool in this thread"),
    "v": ("view", "view all", "view all of the call, page by page"),
}
# What a decision needs in full view first (gatehouse.graph.protocol.display's card rule).
NEEDS_VIEW = frozenset("aAwW")


def choice_problem(
    text: str, keys: list[str], choices: dict[str, tuple[str, str, str]] = CHOICES
) -> str | None:
    """None for a valid key; else what to type (the full help for `?`)."""
    text = text.strip()
    if text in keys:
        return None
    if text == "?":
        return "\n".join(f"{k}: {choices[k][2]}" for k in keys)
    return f"type one of: {' '.join(keys)} (? for help)"


def _yes(asker: Asker, question: str) -> bool:
    return asker.line(question).strip().lower() in ("y", "yes")


def _required(asker: Asker, prompt: str, empty: str) -> str:
    return asker.line(prompt, check=lambda t: None if t.strip() else empty).strip()


def parse_args_json(
    text: str, name: str, check_args: Check
) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, "the arguments must be a JSON object"
    problem = check_args(name, value)
    return (None, problem) if problem else (value, None)


def page(console: Console, asker: Asker, text: str) -> bool:
    """Show all of `text`, a screen at a time (long lines cut at the screen's width, so
    a page never scrolls its own top away); True when the person saw it to the end."""
    width = max(20, console.size.width)
    rows = [
        piece for line in whole(text).split("\n") for piece in (chop_cells(line, width) or [""])
    ]
    height = max(5, console.size.height - 3)
    for start in range(0, len(rows), height):
        console.print(Text("\n".join(rows[start : start + height])), soft_wrap=True)
        if (left := len(rows) - start - height) > 0:
            more = f"-- {left} more line{'s' if left != 1 else ''}: Enter for more, q to stop -- "
            if asker.line(more).strip().lower() == "q":
                return False
    return True


def hides_part(row: dict[str, Any]) -> bool:
    return not all(p.complete for p in render.card_parts(row))


def _keys(row: dict[str, Any], hidden: bool) -> list[str]:
    allowed = {*row["allowed"], *(["view"] if hidden else [])}
    narrow = narrow_grant(row["name"], row["args"]) is not None
    return [k for k, (kind, _, _) in CHOICES.items() if kind in allowed and (narrow or k != "w")]


def see_hidden(console: Console, asker: Asker, pending: Approval) -> bool:
    """Page through each call whose card hides a part; True when the person saw it all."""
    for row in render.pending_rows(pending):
        if hides_part(row):
            console.print(Text(f"call {row['call']} ({visible(row['name'])}) in full:", "bold"))
            if not page(console, asker, "\n\n".join(render.call_texts(row))):
                return False
    return True


def _confirmed(console: Console, asker: Asker, name: str, args: dict[str, Any], risk: Any) -> bool:
    """True when the call may run: one gatehouse.graph.protocol.confirm names is shown whole and
    needs a yes."""
    if (why := confirmation(name, args, risk)) is None:
        return True
    console.print(Text(f"Approve {visible(name)}? {why}. The whole call:", "bold yellow"))
    if not page(console, asker, visible_json(args, indent=2)):
        return False
    return _yes(asker, "approve it? [y/N] ")


def _grant(row: dict[str, Any], key: str, console: Console) -> bool | str | None:
    scope = narrow_grant(row["name"], row["args"]) if key == "w" else None
    if key == "W" or scope is not None:
        covers = scope.covers if scope else whole_tool(row["name"])
        console.print(Text(f"always allowed from now on: {covers}", "yellow"))
    return True if key == "W" else scope.pattern if scope else None


def _decide_call(
    console: Console,
    asker: Asker,
    row: dict[str, Any],
    total: int,
    check_args: Check,
    preview: Check | None,
) -> tuple[Decision, bool]:
    """One call's decision, and whether the person chose to approve the rest too."""
    console.print(render.call_card(row, total))
    hidden = hides_part(row)
    keys = _keys(row, hidden)
    console.print(Text("  ".join(f"[{k}] {CHOICES[k][1]}" for k in keys), "dim"))
    if "W" in keys:
        narrow = narrow_grant(row["name"], row["args"])
        covers = f"w covers {narrow.covers}; " if narrow else ""
        console.print(Text(f"  {covers}W covers {whole_tool(row['name'])}", "dim"))
    while True:
        key = asker.line("decision> ", check=functools.partial(choice_problem, keys=keys)).strip()
        if key == "v":
            hidden = not page(console, asker, "\n\n".join(render.call_texts(row)))
            continue
        if key in NEEDS_VIEW and hidden:
            console.print(Text("Part of this call is hidden: v to view all of it first.", "red"))
            continue
        if key == "r":
            return reject(asker.line("reason> ").strip() or None), False
        if key == "s":
            return respond(_required(asker, "response> ", "a response cannot be empty")), False
        if key == "e":
            args = edit_args(console, asker, row, check_args)
            if _edited_ok(console, asker, row, args, preview):
                return edit(row["name"], args), False
            continue
        if not _confirmed(console, asker, row["name"], row["args"], row.get("risk")):
            console.print(Text("not approved; decide again.", "yellow"))
            continue
        return approve(always_allow=_grant(row, key, console)), key == "A"


def _edited_ok(
    console: Console, asker: Asker, row: dict[str, Any], args: dict[str, Any], preview: Check | None
) -> bool:
    """Show the edit (a diff, the edited call's preview) and ask before it runs."""
    before = visible_json(row["args"], indent=2).splitlines()
    after = visible_json(args, indent=2).splitlines()
    diff = difflib.unified_diff(before, after, "arguments as asked", "as edited", lineterm="")
    console.print(Text("The edited call:", "bold"))
    for line in diff:
        console.print(Text(visible(line), render.diff_style(line)))
    if preview is not None and (text := preview(row["name"], args)):
        console.print(Text("preview of the edited call:", "bold"))
        page(console, asker, text)
    if confirmation(row["name"], args, row.get("risk")) is not None:
        return _confirmed(console, asker, row["name"], args, row.get("risk"))
    return _yes(asker, "run the edited call? [y/N] ")


def ask_decisions(
    console: Console,
    asker: Asker,
    pending: Approval,
    check_args: Check,
    preview: Check | None = None,
) -> ReviewAnswer:
    """One decision per call, in request order; "all" shows each remaining call and asks
    once more (a decision covers only what the person was shown)."""
    rows = render.pending_rows(pending)
    decisions: list[Decision] = []
    while len(decisions) < len(rows):
        row = rows[len(decisions)]
        decision, rest = _decide_call(console, asker, row, len(rows), check_args, preview)
        decisions.append(decision)
        if rest and not _approve_rest(console, asker, rows[len(decisions) :], decisions):
            console.print(Text("the remaining calls are asked one by one.", "yellow"))
    return review(decisions)


def _approve_rest(
    console: Console, asker: Asker, rest: list[dict[str, Any]], decisions: list[Decision]
) -> bool:
    """ "All": show every remaining call; one yes approves them when each is in full view
    and none needs its own confirmation."""
    for row in rest:
        console.print(render.call_card(row, len(rest) + len(decisions)))
    if not rest or any(
        "approve" not in r["allowed"]
        or hides_part(r)
        or confirmation(r["name"], r["args"], r.get("risk"))
        for r in rest
    ):
        return not rest
    these = "this call" if len(rest) == 1 else f"these {len(rest)} calls"
    if not _yes(asker, f"approve {these} too? [y/N] "):
        return False
    decisions.extend(approve() for _ in rest)
    return True


# key: (outcome answer it needs allowed, menu label, help line)
OUTCOME_CHOICES = {
    "a": ("run_again", "run again", "run the call again (may repeat its side effect)"),
    "f": ("mark_failed", "mark failed", "mark it as failed, with an optional note for the model"),
    "s": ("respond", "respond", "respond with what really happened (becomes the tool result)"),
}


def ask_outcome(console: Console, asker: Asker, pending: OutcomeUnknown) -> OutcomeAnswer:
    render.render_outcome(console, pending)
    allowed = pending.allowed
    keys = [k for k, (kind, _, _) in OUTCOME_CHOICES.items() if kind in allowed]
    console.print(Text("  ".join(f"[{k}] {OUTCOME_CHOICES[k][1]}" for k in keys), "dim"))
    while True:
        key = asker.line("outcome> ", check=lambda t: choice_problem(t, keys, OUTCOME_CHOICES))
        key = key.strip()
        if key == "a":
            again = f"Running {pending.call.name} again may repeat its side effect"
            console.print(Text(f"{again} if the first attempt did its work.", "yellow"))
            if _yes(asker, "run it again? [y/N] "):
                return outcome("run_again")
            continue
        if key == "f":
            return outcome("mark_failed", asker.line("note (optional)> ").strip() or None)
        return outcome(
            "respond", _required(asker, "what really happened> ", "the outcome cannot be empty")
        )


def edit_args(
    console: Console, asker: Asker, row: dict[str, Any], check_args: Check
) -> dict[str, Any]:
    name = row["name"]
    text = visible_json(row["args"], indent=2)  # hidden characters as JSON escapes: same value
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    while editor and asker.interactive:
        with tempfile.NamedTemporaryFile(
            "w", suffix=".json", prefix="gatehouse-args-", delete=False
        ) as f:
            f.write(text)
        try:
            # Through the shell, like git does: $EDITOR may carry flags ("code --wait").
            subprocess.run(f'{editor} "{f.name}"', shell=True, check=False)
            text = Path(f.name).read_text()
        finally:
            os.unlink(f.name)
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
