"""`http_request`: fetch a URL. A GET to an allow-listed host, with only headers that
negotiate the response (Accept …), runs freely; anything else asks. A redirect is
followed only when its request would itself run freely: an approval covers the URL it
matched, never the `/admin/...` an open redirect points to. HTML comes back as text.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import httpx
from langchain_core.tools import BaseTool
from pydantic import Field

from graph.protocol.tools import stream_output
from tools.base import gatehouse_tool
from tools.urls import URLError, canonical_url

TIMEOUT_S = 20.0
MAX_BYTES = 2_000_000
TEXT_CHARS = 20_000
MAX_REDIRECTS = 5
USER_AGENT = "Gatehouse/0.1 (+tool http_request)"

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


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
    except (URLError, httpx.InvalidURL, TypeError):
        return False
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return False
    host = parsed.host.lower().rstrip(".")
    with_port = f"{host}:{parsed.port}" if parsed.port else host
    return any(
        with_port == e if ":" in e and not e.startswith("[") else fnmatch.fnmatchcase(host, e)
        for e in (entry.lower().strip() for entry in allow_hosts)
    )


def harmless_headers(headers: Any) -> bool:
    """True when a GET with these headers is still just a fetch."""
    return not headers or (
        isinstance(headers, dict)
        and all(
            isinstance(k, str)
            and k.strip().lower() in FREE_HEADERS
            and isinstance(v, str)
            and v.isprintable()
            for k, v in headers.items()
        )
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

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            self.tag(tag, 1)

        def handle_endtag(self, tag: str) -> None:
            self.tag(tag, -1)

        def tag(self, tag: str, step: int) -> None:
            if tag == "title":
                self.in_title = step > 0
            elif tag in _SKIP:
                self.skip = max(self.skip + step, 0)
            if tag in _BLOCK:
                self.parts.append("\n")

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
        return (
            args.get("method", "GET") in ("GET", "HEAD")
            and not args.get("body")
            and harmless_headers(args.get("headers"))
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
    for k, v in (args.get("headers") or {}).items():
        line += f"\n{k}: {v}"
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
    try:
        target = httpx.URL(canonical_url(str(target)))
    except (URLError, httpx.InvalidURL):
        return (
            f"HTTP {response.status_code} redirect to {target} (not followed: not an http(s) URL)"
        )
    request = {"url": str(target), "method": next_method, "body": next_body, "headers": headers}
    if not auto_allow(request):
        return (
            f"HTTP {response.status_code} redirect to {target} (not followed: a request there "
            "would need its own approval; call http_request with that URL to go there)"
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
    try:
        text = bytes(data).decode(response.encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = bytes(data).decode("utf-8", errors="replace")
    if "html" in mime or (
        not mime and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        text = html_to_text(text)
    if len(text) > text_chars:
        text = text[:text_chars] + f"\n… (text cut at {text_chars} characters)"
    return f"{head}\n\n{text}" if text else head
