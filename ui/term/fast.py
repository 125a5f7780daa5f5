"""The read-only commands' arguments, read without typer.

typer (0.29) checks every parameter through a pydantic `TypeAdapter`, so parsing any
command imports pydantic and builds validators: most of a read-only command's time.
`threads`, `pending` and `show` take a few plain options; when the command line is one
of theirs, `ui.term.cli.main` calls the command directly with what is parsed here.
Anything else (`--help`, an unknown or malformed option) returns None and typer
parses it as always, errors and help included.
"""

from __future__ import annotations

from typing import Any

READ_ONLY = ("threads", "pending", "show")


def parse_read_only(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(command, keyword arguments) for a read-only command line, or None."""
    if not argv or argv[0] not in READ_ONLY:
        return None
    command, rest = argv[0], argv[1:]
    kwargs: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, eq, inline = arg.partition("=")
        if arg == "--json":
            kwargs["as_json"] = True
        elif name in ("--db", "--limit") and (eq or i + 1 < len(rest)):
            value = inline if eq else rest[i + 1]
            i += 0 if eq else 1
            if name == "--db":
                kwargs["db"] = value
            elif command == "threads":
                try:
                    kwargs["limit"] = int(value)
                except ValueError:
                    return None  # typer says what is wrong with it
            else:
                return None
        elif arg == "--":
            positional.extend(rest[i + 1:])
            break
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
        i += 1
    if command == "show":
        if len(positional) != 1:
            return None
        kwargs["thread_id"] = positional[0]
    elif positional:
        return None
    return command, kwargs
