"""Who may reach an approval surface (ui/web/guard.py, server_auth.py): `[access]`,
overridden by `ENV`. The install secret (a 0600 file outside the workspace, no tool
reaches it: `private_paths`) signs identities and is the sign-in and local bearer token:
who can read it can approve, as who can open the database already can.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import hmac
import json
import os
import secrets
import stat
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatehouse.graph.protocol.errors import ConfigError

MODES = ("token", "proxy", "oidc")
SECRET_FILE_NAME = "gatehouse.secret"
# Where LangGraph Studio runs; its pages call the local server from this origin.
STUDIO_ORIGIN = "https://smith.langchain.com"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
# How long a signed identity is good (the guard signs one per request).
SIGNED_MAX_AGE_S = 7 * 24 * 3600

ENV = {
    "GATEHOUSE_WEB_AUTH": "web",
    "GATEHOUSE_ALLOWED_HOSTS": "hosts",
    "GATEHOUSE_ALLOWED_ORIGINS": "origins",
    "GATEHOUSE_SERVER_ORIGINS": "server_origins",
    "GATEHOUSE_PROXY_SECRET": "proxy_secret",
    "GATEHOUSE_PROXY_USER_HEADER": "proxy_user_header",
    "GATEHOUSE_API_KEYS": "api_keys",
    "GATEHOUSE_SECRET_FILE": "secret_file",
    "GATEHOUSE_LOCAL_USER": "local_user",
}
_LIST_KEYS = ("hosts", "origins", "server_origins")


@dataclass(frozen=True)
class Access:
    """The `[access]` settings, validated."""

    web: str = "token"
    # Host names a request may name, and browser origins the web app accepts, besides
    # the loopback ones and its own; origins LangGraph Server answers besides Studio's.
    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    server_origins: tuple[str, ...] = ("http://localhost:3000", "http://127.0.0.1:3000")
    proxy_secret: str | None = None
    proxy_user_header: str = "X-Forwarded-User"
    proxy_secret_header: str = "X-Gatehouse-Proxy-Secret"
    api_keys: Mapping[str, str] = field(default_factory=dict)
    secret_file: str | None = None
    local_user: str | None = None

    def allowed_hosts(self) -> set[str]:
        return {h.lower() for h in (*LOCAL_HOSTS, *self.hosts)}

    def local_identity(self) -> str:
        """Who the install secret signs in as: `local_user`, else the OS user."""
        try:
            return self.local_user or getpass.getuser() or "local"
        except Exception:  # noqa: BLE001 - no user name is not an error
            return "local"


def load_access(
    table: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Access:
    """`[access]` from gatehouse.toml (`table`), overridden by the environment."""
    env = os.environ if env is None else env
    values: dict[str, Any] = dict(table or {})
    if unknown := set(values) - set(Access.__dataclass_fields__):
        raise ConfigError(f"[access]: unknown settings {sorted(unknown)}")
    for var, key in ENV.items():
        if env.get(var):
            values[key] = env[var]
    for key in _LIST_KEYS:
        if key in values:
            values[key] = tuple(_words(values[key], key))
    if "api_keys" in values:
        values["api_keys"] = _api_keys(values["api_keys"])
    access = Access(**values)
    if access.web not in MODES:
        raise ConfigError(f"[access] web must be one of {', '.join(MODES)}, not {access.web!r}")
    if access.web == "proxy" and not access.proxy_secret:
        raise ConfigError(
            '[access] web = "proxy" needs proxy_secret (or GATEHOUSE_PROXY_SECRET): the shared secret your '
            "proxy sends in the X-Gatehouse-Proxy-Secret header, so nobody else can claim a user"
        )
    if access.proxy_secret is not None and len(access.proxy_secret) < 16:
        raise ConfigError("[access] proxy_secret must be at least 16 characters")
    for origin in (*access.origins, *access.server_origins):
        if origin != origin_of(origin):
            raise ConfigError(
                f"[access]: {origin!r} is not an origin (scheme://host[:port], no path)"
            )
    return access


def _words(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        return [w.strip() for w in value.split(",") if w.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(w, str) for w in value):
        return list(value)
    raise ConfigError(f"[access] {key} must be a list of strings")


def _api_keys(value: Any) -> dict[str, str]:
    """{key: identity} from a table, or `identity=key,identity=key` from the environment."""
    if isinstance(value, Mapping):
        pairs = {str(identity): str(key) for identity, key in value.items()}
    elif isinstance(value, str):
        pairs = {}
        for item in filter(None, (w.strip() for w in value.split(","))):
            identity, sep, key = item.partition("=")
            if not sep or not identity.strip() or not key.strip():
                raise ConfigError(
                    "GATEHOUSE_API_KEYS must look like 'ana@example.com=KEY,bob=KEY2'"
                )
            pairs[identity.strip()] = key.strip()
    else:
        raise ConfigError("[access] api_keys must be a table of identity = key")
    for identity, key in pairs.items():
        if len(key) < 16:
            raise ConfigError(
                f"[access] api_keys: the key of {identity!r} must be at least 16 characters"
            )
    return {key: identity for identity, key in pairs.items()}


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL, lower-cased ("" when it has none)."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def host_name(host_header: str) -> str:
    """The name in a `Host` header, without port or IPv6 brackets, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "gatehouse"


def secret_path(db: str, access: Access | None = None) -> Path:
    """`[access] secret_file`, else an older install's beside a SQLite file, else one in
    the config folder (keyed by the SQLite file's real path)."""
    if access is not None and access.secret_file:
        return Path(access.secret_file).expanduser()
    if db and "://" not in db:
        file = Path(db).expanduser().resolve()
        if (legacy := file.parent / SECRET_FILE_NAME).exists():
            return legacy
        key = hashlib.sha256(str(file).encode()).hexdigest()[:16]
        return _config_home() / "secrets" / f"{file.name}-{key}"
    return _config_home() / "secret"


def private_paths(db: str, access: Access | None = None) -> list[Path]:
    """What no tool may reach: this secret, its older place, every install's secrets."""
    paths = [secret_path(db, access), _config_home()]
    if db and "://" not in db:
        paths.append(Path(db).expanduser().resolve().parent / SECRET_FILE_NAME)
    return paths


def install_secret(path: Path) -> str:
    """The secret in `path`, created (random, 0600) on first use, made private again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        value = secrets.token_urlsafe(32)
        with os.fdopen(fd, "w") as file:
            file.write(value + "\n")
        return value
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, 0o600)
    value = path.read_text().strip()
    if len(value) < 16:
        raise ConfigError(
            f"the install secret {path} is empty or too short; delete it to make a new one"
        )
    return value


def _mac(secret: str, purpose: str, payload: bytes) -> str:
    digest = hmac.new(secret.encode(), purpose.encode() + b"\0" + payload, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign_identity(
    secret: str, identity: str, *, purpose: str = "web", now: float | None = None
) -> str:
    """A cookie value naming `identity`, signed with the install secret."""
    payload = json.dumps(
        {"u": identity, "t": int(now or time.time())}, separators=(",", ":")
    ).encode()
    body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    return f"{body}.{_mac(secret, purpose, payload)}"


def verify_identity(
    secret: str,
    value: str | None,
    *,
    purpose: str = "web",
    max_age_s: float = SIGNED_MAX_AGE_S,
    now: float | None = None,
) -> str | None:
    """The identity a signed value names, or None when it is forged, altered or expired."""
    if not value or "." not in value:
        return None
    body, mac = value.rsplit(".", 1)
    try:
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        data = json.loads(payload)
    except (ValueError, json.JSONDecodeError):
        return None
    if (
        not hmac.compare_digest(mac, _mac(secret, purpose, payload))
        or not isinstance(data, dict)
        or not isinstance(data.get("u"), str)
        or not isinstance(data.get("t"), int)
        or (now or time.time()) - data["t"] > max_age_s
    ):
        return None
    return data["u"]


def same_secret(given: str | None, expected: str | None) -> bool:
    """Constant-time comparison; nothing matches a missing secret."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


OIDC_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")


def oidc_problem(secrets: Mapping[str, Any]) -> str | None:
    """Why Streamlit's `st.login` cannot sign people in with these secrets, or None."""
    auth = secrets.get("auth")
    if not isinstance(auth, Mapping):
        return '[access] web = "oidc" needs an [auth] table in .streamlit/secrets.toml (Streamlit\'s st.login)'
    providers = [v for v in auth.values() if isinstance(v, Mapping)]
    provider = providers[0] if len(providers) == 1 else auth
    missing = [k for k in OIDC_KEYS[:2] if not auth.get(k)] + [
        k for k in OIDC_KEYS[2:] if not provider.get(k)
    ]
    if missing:
        return f".streamlit/secrets.toml [auth] is missing {', '.join(missing)}"
    if not str(auth["redirect_uri"]).rstrip("/").endswith("/oauth2callback"):
        return "[auth] redirect_uri must end with /oauth2callback (Streamlit's callback route)"
    if not str(provider["server_metadata_url"]).startswith("https://"):
        return "[auth] server_metadata_url must be an https:// URL (the provider's .well-known/openid-configuration)"
    return None


def read_streamlit_secrets(cwd: Path | None = None) -> dict[str, Any]:
    """`.streamlit/secrets.toml` of the home, then the working directory (which wins)."""
    merged: dict[str, Any] = {}
    for folder in (Path.home(), cwd or Path.cwd()):
        file = folder / ".streamlit" / "secrets.toml"
        if file.is_file():
            try:
                merged.update(tomllib.loads(file.read_text()))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"cannot read {file}: {exc}") from exc
    return merged
