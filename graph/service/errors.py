"""Errors as a person should read them: what failed, its kind, whether to retry."""

from __future__ import annotations

import sqlite3

from gatehouse.graph.agent.model_errors import describe_model_error
from gatehouse.graph.protocol.errors import CallAlreadyStarted, HookError


def is_storage_error(exc: BaseException) -> bool:
    """An error of the database driver (SQLite or Postgres), not of the model or a tool."""
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith(
        ("psycopg", "psycopg_pool")
    )


def describe_error(exc: BaseException) -> tuple[str, str, bool]:
    name = type(exc).__name__
    module = type(exc).__module__
    if isinstance(exc, HookError):
        return str(exc), "hook", True
    if isinstance(exc, CallAlreadyStarted):
        return str(exc), "conflict", False
    if (model := describe_model_error(exc)) is not None:
        return model[0], "model", model[1]
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return f"The database is busy (locked by another process): {exc}", "storage", True
    if is_storage_error(exc) or (
        isinstance(exc, OSError) and not module.startswith(("openai", "httpx"))
    ):
        return f"Storage error: {exc}", "storage", True
    if module.startswith(("openai", "httpx", "httpcore")):
        return f"The model API failed ({name}): {exc}", "model", True
    return f"{name}: {exc}", "error", True


def storage_message(exc: BaseException, message: str, location: str) -> str:
    """A storage failure with the database it concerns, and what to do when the disk is full."""
    text = str(exc).lower()
    if "full" in text or getattr(exc, "errno", None) == 28:  # SQLITE_FULL / ENOSPC
        return (
            f"The disk is full: could not write to the Gatehouse database {location}. "
            "Free some space and retry; the thread keeps everything up to its last saved step."
        )
    return f"{message} (database {location})"
