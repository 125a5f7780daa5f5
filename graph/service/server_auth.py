"""LangGraph Server's sign-in (langgraph.json `"auth"`, with `disable_studio_auth`:
else `x-auth-scheme: langsmith` gets in unchecked): a key, or a proxy's user header
proven by its secret. A thread is its maker's; a tool's `approvers` may read threads
and answer pauses. A thread id in use, or a deleted thread's, is never given again.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from langgraph_sdk import Auth

from gatehouse.graph.agent.emit import VISITOR_KEY, speaking_for
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.protocol.decisions import THREAD_CREATED, THREAD_DELETED
from gatehouse.graph.protocol.identity import identity_problem, same_identity
from gatehouse.graph.service.access import (
    Access,
    install_secret,
    load_access,
    same_secret,
    secret_path,
)
from gatehouse.graph.service.config import load_settings

auth = Auth()


# Read once, at import (blocking reads are refused later, inside the server's loop).
_SETTINGS = load_settings()
_ACCESS = load_access(_SETTINGS.access)
_SECRET = install_secret(secret_path(_SETTINGS.db, _ACCESS))


def identity_for(
    headers: dict[str, str], access: Access = _ACCESS, secret: str = _SECRET
) -> str | None:
    """Who the request's credentials name, or None."""
    key = headers.get("x-api-key", "").strip()
    scheme, _, value = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        key = value.strip()
    if key:
        if same_secret(key, secret):
            return access.local_identity()
        for known, identity in access.api_keys.items():
            if same_secret(key, known):
                return identity
        return None
    if access.web == "proxy" and same_secret(
        headers.get(access.proxy_secret_header.lower()), access.proxy_secret
    ):
        user = headers.get(access.proxy_user_header.lower(), "").strip()
        # A name that could pass for someone else's signs nobody in.
        return user if user and identity_problem(user) is None else None
    return None


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    text = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers.items()}
    identity = identity_for(text)
    if identity is None:
        raise Auth.exceptions.HTTPException(
            status_code=401,
            detail="Gatehouse needs credentials: send 'Authorization: Bearer <key>' (this install's secret, "
            "in ~/.config/gatehouse/secrets/, or one of [access] api_keys).",
        )
    return {"identity": identity, "display_name": identity, "is_authenticated": True}


try:
    _APPROVERS = [
        a for t in Policy.from_mapping(_SETTINGS.policy).tools.values() for a in t.approvers
    ]
except ValueError:
    _APPROVERS = []  # the agent refuses to start with this policy anyway


def _approver(user: str) -> bool:
    return any(same_identity(user, a) for a in _APPROVERS)


def _storage() -> Any:
    from gatehouse.graph.service.app import shared_storage

    return shared_storage(_SETTINGS.db)


def _thread_facts(thread_id: str) -> tuple[str | None, bool]:
    """(who owns the thread, if anyone yet; whether the id was a deleted thread's)."""
    storage = _storage()
    life = storage.decisions.life(thread_id) if storage.decisions is not None else None
    if life is not None and life.decision == THREAD_DELETED:
        return None, True
    if life is not None and life.decision == THREAD_CREATED:
        return life.actor, False
    info = storage.index.get(thread_id)
    return (None if info is None else info.owner or _ACCESS.local_identity()), False


async def _owner(thread_id: Any) -> str | None:
    return (await asyncio.to_thread(_thread_facts, str(thread_id)))[0] if thread_id else None


def _someone_else(owner: str | None, user: str) -> bool:
    return owner is not None and not same_identity(owner, user)


def _refuse(detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=403, detail=detail)


async def _claim(thread_id: Any, user: str) -> None:
    """A new thread for `user`: refused for someone else's id or a deleted thread's."""
    if not thread_id:
        return
    tid = str(thread_id)
    owner, deleted = await asyncio.to_thread(_thread_facts, tid)
    if deleted:
        raise _refuse(f"thread id {tid} belonged to a deleted thread; it is not given out again")
    if _someone_else(owner, user):
        raise _refuse(f"thread {tid} belongs to someone else")
    decisions = _storage().decisions
    if owner is None and decisions is not None:  # in the decision log, chained: theirs
        await asyncio.to_thread(decisions.begin_life, tid, user)


@auth.on.threads.create
async def on_thread_create(
    ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate
) -> dict[str, str]:
    user = ctx.user.identity
    await _claim(value.get("thread_id"), user)
    cast(dict[str, Any], value).setdefault("metadata", {})["owner"] = user
    return {"owner": user}


@auth.on.threads.create_run
async def on_run(
    ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate
) -> dict[str, str] | None:
    """The owner runs their thread; an approver may only answer someone else's pause."""
    user = ctx.user.identity
    tid = value.get("thread_id")
    owner = await _owner(tid)
    run = cast(dict[str, Any], value)
    kwargs = run.setdefault("kwargs", {})
    config = kwargs["config"] = kwargs.get("config") or {}
    visitor = _someone_else(owner, user)
    # Written over whatever the client put there: the graph reads it (graph/agent/emit.py).
    config.setdefault("configurable", {})[VISITOR_KEY] = user if visitor else ""
    if not visitor:
        if owner is None:
            await _claim(tid, user)
        run.setdefault("metadata", {})["owner"] = user
        return {"owner": user}
    command = kwargs.get("command") or {}
    answers_only = (
        kwargs.get("input") is None
        and isinstance(command, dict)
        and command.get("resume") is not None
        and not command.get("update")
        and not command.get("goto")
    )
    if not answers_only or not _approver(user):
        raise _refuse(f"thread {tid} belongs to someone else")
    return None


@auth.on.threads
async def on_thread(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str] | None:
    """The owner's; an approver may read any thread, and resolve one (resolve.py)."""
    user = ctx.user.identity
    if ctx.action in ("read", "search") and _approver(user):
        return None
    if ctx.action == "update" and _approver(user) and value.get("thread_id"):
        visitor = _someone_else(await _owner(value["thread_id"]), user)
        speaking_for(user, visitor=visitor)
        return None if visitor else {"owner": user}
    speaking_for(user)
    return {"owner": user}
