"""LangGraph Server's sign-in (langgraph.json `"auth": {"path": ...}`): every request
to `gatehouse studio`, `langgraph dev` or a LangGraph Server deployment carries a
credential, and the server's authenticated user is who the decision log names.

Accepted, in order (graph/service/access.py holds the settings):
- `Authorization: Bearer <key>` or `X-Api-Key: <key>` where the key is this install's
  secret (the local user: the one who can read `gatehouse.secret`), or one of
  `[access] api_keys` (a team: each key names a person);
- with `[access] web = "proxy"`: the proxy's user header, proven by the shared
  `X-Gatehouse-Proxy-Secret`.

langgraph.json sets `disable_studio_auth: true`: otherwise `langgraph dev` lets any
request that says `x-auth-scheme: langsmith` in as a Studio user without checking
anything. Studio connects with the same header as everyone else (docs/deploy.md).
"""

from __future__ import annotations

from langgraph_sdk import Auth

from graph.service.access import Access, install_secret, load_access, same_secret, secret_path
from graph.service.config import load_settings

auth = Auth()


def _load() -> tuple[Access, str]:
    settings = load_settings()
    access = load_access(settings.access)
    return access, install_secret(secret_path(settings.db, access))


# Read once, when the server imports this module (blocking reads are refused later,
# inside the server's event loop).
_ACCESS, _SECRET = _load()


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
        return user or None
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
