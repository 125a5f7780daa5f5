"""The canonical form of an http(s) URL: what policy rules match and exactly what
`http_request` sends (`/public/%2e%2e/admin` reaches `/admin` on many servers): host
lowercased, default port dropped, unreserved and `/` escapes decoded (others uppercased),
a backslash read as `/`, dot segments removed (`..;x` is `..`), no fragment.
"""

from __future__ import annotations

import re
import string
from urllib.parse import quote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
# Kept as they are in a path (RFC 3986 pchar minus unreserved); everything else is escaped.
_PATH_SAFE = frozenset("!$&'()*+,;=:@")
_QUERY_SAFE = _PATH_SAFE | frozenset("/?")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


class URLError(ValueError):
    """A URL that has no canonical http(s) form."""


def _unescape(text: str, also: frozenset[str]) -> str:
    """Decode %XX where XX is an unreserved character (or one of `also`); uppercase the rest."""

    def one(m: re.Match[str]) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _UNRESERVED or ch in also else "%" + m.group(1).upper()

    return _ESCAPE.sub(one, text)


def _requote(text: str, safe: frozenset[str]) -> str:
    """Escape what must be (UTF-8, uppercase hex), leaving existing %XX alone."""
    parts = re.split(r"(%[0-9A-F]{2})", text)
    return "".join(p if _ESCAPE.fullmatch(p) else quote(p, safe="".join(safe)) for p in parts)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 on an absolute path: `/a/b/../c/./d` -> `/a/c/d`."""
    out: list[str] = []
    segments = path.split("/")[1:]
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        # `..;x` is `..` to servers that drop path parameters before routing (Tomcat).
        head = seg.split(";", 1)[0]
        if head not in (".", ".."):
            out.append(seg)
            continue
        if head == ".." and out:
            out.pop()
        if last:
            out.append("")
    return "/" + "/".join(out)


def canonical_url(url: str) -> str:
    """The canonical form of an http(s) URL; `URLError` when it has none."""
    if not isinstance(url, str):
        raise URLError("a URL must be a string")
    text = url.strip()
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise URLError(f"URL {url!r} holds control characters; escape them")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise URLError(f"invalid URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise URLError(f"only http and https URLs are supported, not {scheme or 'none'!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise URLError(f"URL {url!r} has no host")
    if "%" in host or any(ch in host for ch in "\\/@"):
        raise URLError(f"URL {url!r} has an odd host {host!r}")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise URLError(f"URL {url!r} has a host that cannot be encoded: {exc}") from exc
    userinfo = ""
    if "@" in parts.netloc:
        userinfo = (
            _requote(_unescape(parts.netloc.rsplit("@", 1)[0], frozenset()), _PATH_SAFE - {"@"})
            + "@"
        )
    netloc = (
        userinfo + host + (f":{port}" if port is not None and port != DEFAULT_PORTS[scheme] else "")
    )
    # `%2F` and a backslash (raw or `%5C`) decoded: servers that decode before routing see `/`.
    decoded = _unescape(parts.path or "/", frozenset("/\\")).replace("\\", "/")
    path = remove_dot_segments(_requote(decoded, _PATH_SAFE | {"/"}))
    if not path.startswith("/"):
        path = "/" + path
    query = _requote(_unescape(parts.query, frozenset()), _QUERY_SAFE)
    return f"{scheme}://{netloc}{path}" + (
        f"?{query}" if query or text.split("#", 1)[0].endswith("?") else ""
    )
