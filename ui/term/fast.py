"""Plain command lines of `threads`, `pending`, `show`, `approve`, `reject` and the web UI,
read without typer: its pydantic check of every parameter is most of a read-only command's
time. Anything else (`--help`, `--edit`, an unknown or malformed option) is typer's."""

from __future__ import annotations

from functools import partial
from typing import Any

# Each command's plain options: option → (keyword, kind). A kind is "flag" (True when
# given), "str", "int", or "calls" (an int, repeatable). `--edit N JSON` (two values),
# help and anything unknown, repeated or malformed are left to typer.
_COMMON = {"--json": ("as_json", "flag"), "--db": ("db", "str")}
_DECIDE = {
    **_COMMON,
    "--interrupt-id": ("interrupt_id", "str"),
    "--request": ("interrupt_id", "str"),
    "--call": ("call", "calls"),
    "-c": ("call", "calls"),
}
_OPTIONS: dict[str, dict[str, tuple[str, str]]] = {
    "threads": {**_COMMON, "--limit": ("limit", "int")},
    "pending": _COMMON,
    "": {"--port": ("port", "int")},  # `gatehouse` alone: the web UI
    "ui": {
        "--port": ("port", "int"),
        "--browser": ("browser", "flag"),
        "--no-browser": ("no_browser", "flag"),
    },
    "show": _COMMON,
    "approve": {
        **_DECIDE,
        "--all": ("all_", "flag"),
        "--always": ("always", "flag"),
        "--always-tool": ("always_tool", "flag"),
        "--reject-others": ("reject_others", "str"),
    },
    "reject": {
        **_DECIDE,
        "--approve-others": ("approve_others", "flag"),
        "--reason": ("reason", "str"),
        "-m": ("reason", "str"),
    },
}


def _parse(argv: list[str], commands: tuple[str, ...]) -> tuple[str, dict[str, Any]] | None:
    if not argv or argv[0] not in commands:
        return None
    command, options, args = argv[0], _OPTIONS[argv[0]], iter(argv[1:])
    kwargs: dict[str, Any] = {}
    positional: list[str] = []
    for arg in args:
        if arg == "--":
            positional.extend(args)
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name not in options:
            return None
        key, kind = options[name]
        if kind == "flag":
            if eq or key in kwargs:
                return None
            kwargs[key] = True
            continue
        value = inline if eq else next(args, None)
        if value is None or (
            kind in ("calls", "int") and not (value.isascii() and value.isdigit())
        ):
            return None  # missing; or typer says what is wrong with it
        if kind == "calls":
            kwargs.setdefault(key, []).append(int(value))
        elif key in kwargs:
            return None  # given twice: typer's rule (the last wins) is not worth copying
        else:
            kwargs[key] = int(value) if kind == "int" else value
    if len(positional) != (0 if command in ("threads", "pending", "", "ui") else 1):
        return None
    if positional:
        kwargs["thread_id"] = positional[0]
    return command, kwargs


parse_read_only = partial(_parse, commands=("threads", "pending", "show"))
parse_decision = partial(_parse, commands=("approve", "reject"))


def parse_web_ui(argv: list[str]) -> dict[str, Any] | None:
    """`port` and `browser` for a plain command line that starts the web UI: `gatehouse`,
    `gatehouse --port N`, `gatehouse ui [--port N] [--browser | --no-browser]`; or None
    (typer parses it). A person's first page waits for whatever runs before the server
    starts: typer, pydantic and rich took ~0.2 s of it."""
    parsed = _parse(argv if argv[:1] == ["ui"] else ["", *argv], ("", "ui"))
    if parsed is None or {"browser", "no_browser"} <= parsed[1].keys():
        return None
    return {"port": parsed[1].get("port"), "browser": "no_browser" not in parsed[1]}
