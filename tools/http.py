"""`http_request`: fetch a URL. A GET to an allow-listed host, with only headers that
negotiate the response (Accept …), runs freely; anything else asks. A redirect is
followed only when its request would itself run freely: an approval covers the URL it
matched, never the `/admin/...` an open redirect points to. Rules match, and the tool
sends, a URL's canonical form: `/public/%2e%2e/admin` reaches `/admin` on many servers.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import string
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlsplit

import httpx
from langchain_core.tools import BaseTool
from pydantic import Field

from gatehouse.graph.protocol.tools import stream_output
from gatehouse.tools.base import gatehouse_tool

TIMEOUT_S = 20.0
MAX_BYTES = 2_000_000
TEXT_CHARS = 20_000
MAX_REDIRECTS = 5
USER_AGENT = "Gatehouse/0.1 (+tool http_request)"

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

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
    for i, seg in enumerate(segments, 1):
        # `..;x` is `..` to servers that drop path parameters before routing (Tomcat).
        head = seg.split(";", 1)[0]
        if head not in (".", ".."):
            out.append(seg)
            continue
        if head == ".." and out:
            out.pop()
        if i == len(segments):
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
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise URLError(f"URL {url!r} has a host that cannot be encoded: {exc}") from exc
    if "@" in parts.netloc:
        user = _unescape(parts.netloc.rsplit("@", 1)[0], frozenset())
        host = _requote(user, _PATH_SAFE - {"@"}) + "@" + host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        host += f":{port}"
    # `%2F` and a backslash (raw or `%5C`) decoded: servers that decode before routing see `/`.
    decoded = _unescape(parts.path or "/", frozenset("/\\")).replace("\\", "/")
    path = remove_dot_segments(_requote(decoded, _PATH_SAFE | {"/"}))
    query = _requote(_unescape(parts.query, frozenset()), _QUERY_SAFE)
    return f"{scheme}://{host}{path}" + (
        f"?{query}" if query or text.split("#", 1)[0].endswith("?") else ""
    )


# Headers that only negotiate how a response comes back. Others (Host, Authorization,
# X-HTTP-Method-Override …) can change what a request does or whom it speaks for.
FREE_HEADERS = frozenset({
    "accept", "accept-language", "accept-encoding", "cache-control", "if-none-match",
    "if-modified-since", "range", "user-agent",
})  # fmt: skip


class HTTPToolError(ValueError):
    """A URL that cannot be fetched as asked (bad scheme, too big, network error)."""


def host_allowed(url: str, allow_hosts: Sequence[str]) -> bool:
    """`example.com` allows that host on any port; `*.example.com` its subdomains;
    `localhost:8080` that host and port only."""
    try:
        parsed = httpx.URL(canonical_url(url))
    except (URLError, httpx.InvalidURL):
        return False
    host = parsed.host
    with_port = f"{host}:{parsed.port}" if parsed.port else host
    return any(
        with_port == e if ":" in e and not e.startswith("[") else fnmatch.fnmatchcase(host, e)
        for e in (entry.lower().strip() for entry in allow_hosts)
    )


_SKIP = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
          "header", "footer", "pre", "blockquote", "table", "ul", "ol", "hr", "title"}  # fmt: skip


def html_to_text(html: str) -> str:
    """A page's title and visible text."""
    from html.parser import HTMLParser  # imported only when a page is HTML

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.title, self.skip, self.in_title = "", 0, False

        def handle_starttag(self, tag: str, attrs: Any, step: int = 1) -> None:
            if tag == "title":
                self.in_title = step > 0
            elif tag in _SKIP:
                self.skip = max(self.skip + step, 0)
            if tag in _BLOCK:
                self.parts.append("\n")

        def handle_endtag(self, tag: str) -> None:
            self.handle_starttag(tag, None, step=-1)

        def handle_data(self, data: str) -> None:
            if self.in_title:
                self.title += data
            elif not self.skip:
                self.parts.append(data)

    parser = Text()
    parser.feed(html)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    body = "\n".join(line for line in lines if line)
    title = " ".join(parser.title.split())
    return f"# {title}\n\n{body}" if title else body


def make_http_tool(
    allow_hosts: Sequence[str] = (),
    *,
    timeout_s: float = TIMEOUT_S,
    max_bytes: int = MAX_BYTES,
    text_chars: int = TEXT_CHARS,
) -> BaseTool:
    allow = list(allow_hosts)

    def auto_allow(args: dict[str, Any]) -> bool:
        headers = args.get("headers") or {}  # with other headers a GET is more than a fetch
        return (
            args.get("method", "GET") in ("GET", "HEAD")
            and not args.get("body")
            and isinstance(headers, dict)
            and all(
                isinstance(k, str)
                and k.strip().lower() in FREE_HEADERS
                and isinstance(v, str)
                and v.isprintable()
                for k, v in headers.items()
            )
            and host_allowed(str(args.get("url", "")), allow)
        )

    @gatehouse_tool(
        risk="network",
        match_arg="url",
        preview=functools.partial(request_preview, allow=allow),
        auto_allow=auto_allow,
        canonical=lambda args: {"url": canonical_url(args["url"])},
    )
    def http_request(
        url: Annotated[str, Field(description="Full http:// or https:// URL")],
        method: Method = "GET",
        body: Annotated[
            str | None, Field(description="Request body (for POST, PUT, PATCH)")
        ] = None,
        headers: Annotated[
            dict[str, str] | None, Field(description="Extra request headers")
        ] = None,
    ) -> str:
        """Make an HTTP request and return the status, content type and body as text.

        HTML pages come back as readable text (scripts and styles removed). Bodies
        are capped at 2 MB and 20,000 characters. GETs to allow-listed hosts run at
        once; other hosts, methods and headers (beyond Accept-like ones) wait for a
        person's approval.
        """
        # The canonical URL is the one policy rules matched: send exactly that.
        try:
            current = httpx.URL(canonical_url(url))
        except (URLError, httpx.InvalidURL) as exc:
            raise HTTPToolError(
                str(exc) if isinstance(exc, URLError) else f"invalid URL {url!r}: {exc}"
            ) from exc
        # trust_env=False: no proxy or .netrc credentials are picked up behind the user's back.
        with httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                sent = {"User-Agent": USER_AGENT, **(headers or {})}
                request = client.build_request(method, current, content=body, headers=sent)
                try:
                    response = client.send(request, stream=True)
                except httpx.HTTPError as exc:
                    raise HTTPToolError(
                        f"{method} {current} failed: {type(exc).__name__}: {exc}"
                    ) from exc
                try:
                    if not response.is_redirect:
                        return _read(response, max_bytes, text_chars)
                    step = _redirect(response, current, method, body, headers, auto_allow)
                finally:
                    response.close()
                if isinstance(step, str):
                    return step
                current, method, body = step
        raise HTTPToolError(f"more than {MAX_REDIRECTS} redirects")

    return http_request


def request_preview(args: dict[str, Any], allow: Sequence[str]) -> str:
    """The request as sent (and as written, when they differ), its headers and body."""
    raw = str(args.get("url", ""))
    try:
        sent = canonical_url(raw)
    except URLError as exc:
        line = f"{args.get('method', 'GET')} {raw}\n(will fail: {exc})"
    else:
        line = f"{args.get('method', 'GET')} {sent}"
        if sent != raw:
            line += f"\n(as written: {raw})"
    if not host_allowed(raw, allow):
        line += "\n(host is not on the allow list)"
    line += "".join(f"\n{k}: {v}" for k, v in (args.get("headers") or {}).items())
    if args.get("body"):  # whole: the card decides how much to show at once
        line += "\n\n" + str(args["body"])
    return line


def _redirect(
    response: httpx.Response,
    current: httpx.URL,
    method: str,
    body: str | None,
    headers: dict[str, str] | None,
    auto_allow: Callable[[dict[str, Any]], bool],
) -> str | tuple[httpx.URL, Any, str | None]:
    """The next request (URL, method, body), or the answer: no redirect past an approval."""
    target = current.join(response.headers.get("location", ""))
    next_method, next_body = method, body
    if response.status_code in (301, 302, 303) and method not in ("GET", "HEAD"):
        next_method, next_body = "GET", None
    said = f"HTTP {response.status_code} redirect to"
    try:
        target = httpx.URL(canonical_url(str(target)))
    except (URLError, httpx.InvalidURL):
        return f"{said} {target} (not followed: not an http(s) URL)"
    request = {"url": str(target), "method": next_method, "body": next_body, "headers": headers}
    if not auto_allow(request):
        return (
            f"{said} {target} (not followed: a request there would need its own approval; "
            "call http_request with that URL to go there)"
        )
    stream_output(f"redirect {response.status_code} -> {target}")
    return target, next_method, next_body


def _read(response: httpx.Response, max_bytes: int, text_chars: int) -> str:
    data = bytearray()
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) > max_bytes:
            break
    cut = len(data) > max_bytes
    del data[max_bytes:]
    ctype = response.headers.get("content-type", "")
    head = f"HTTP {response.status_code} {response.reason_phrase}\nURL: {response.url}\ncontent-type: {ctype or '(none)'}"
    if cut:
        head += f"\n(body cut at {max_bytes} bytes)"
    mime = ctype.split(";")[0].strip().lower()
    textual = (
        mime.startswith("text/")
        or mime.endswith(("json", "xml", "javascript"))
        or mime in ("", "application/x-www-form-urlencoded")
    )
    if not textual or b"\x00" in data[:4096]:
        return f"{head}\n\n(binary content, {len(data)} bytes; not shown)"
    # httpx names a charset Python knows (else its default, utf-8).
    text = bytes(data).decode(response.encoding or "utf-8", errors="replace")
    if "html" in mime or (
        not mime and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        text = html_to_text(text)
    if len(text) > text_chars:
        text = text[:text_chars] + f"\n… (text cut at {text_chars} characters)"
    return f"{head}\n\n{text}" if text else head
