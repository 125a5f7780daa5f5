"""Errors a client can meet: each says what was wrong and that nothing changed."""

from __future__ import annotations


class GatehouseError(Exception):
    """Base of the errors below."""


class DecisionError(GatehouseError, ValueError):
    """An answer to an approval request was refused; nothing changed."""


class NothingPending(DecisionError):
    """A decision was sent for a thread that is not waiting for one."""


class StaleDecision(DecisionError):
    """A decision names an approval request that is no longer the pending one."""


class AwaitingDecision(DecisionError):
    """The thread waits for a decision: answer it first (undo and fork, unless forced)."""


class RunInProgress(GatehouseError, RuntimeError):
    """Another run (in this or another process) is active on the thread."""


class AlreadyDecided(StaleDecision, RunInProgress):
    """Another run (a double click, another tab or process) is acting on this thread."""


class CallAlreadyStarted(GatehouseError, RuntimeError):
    """Another run claimed this tool call (two clients resumed one approval); not run again."""


class StorageError(GatehouseError, RuntimeError):
    """The database cannot be opened or used; the message names the file."""


class ConfigError(GatehouseError, ValueError):
    """The config file or an environment variable is malformed."""


class InvalidThreadId(GatehouseError, ValueError):
    """Not a thread id (empty, too long, a character outside the allowed set)."""


class ImportRefused(GatehouseError, ValueError):
    """A thread export cannot be imported as it is; nothing was written."""


class HookError(GatehouseError, RuntimeError):
    """A hook raised or returned a broken update; the run stops at the last consistent checkpoint."""
