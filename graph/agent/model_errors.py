"""What went wrong when the model API failed, in words a person can act on. The whole
chain is read (langchain-openai wraps `openai`'s errors, which wrap `httpx`'s, which
wrap the socket's): the outermost recognised error gives the kind, the innermost the
detail. A LiteLLM proxy's error *response* (`x-litellm-*` headers) comes after its own
retries (`proxy_retried`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core import exceptions as lc

MESSAGE_CHARS = 300
_TRANSPORT_MODULES = ("openai", "anthropic", "ollama", "httpx", "httpx2", "httpcore", "h11")
# What servers say when the prompt is longer than the model's context window.
_CONTEXT_WORDS = re.compile(
    "context length|context window|context_length|maximum context|too many tokens|"
    "prompt is too long|input is too long|exceeds the context|n_ctx"
)


class EmptyReply(RuntimeError):
    def __init__(self, model: str, *, streamed: bool) -> None:
        how = "streamed, then again without streaming" if streamed else "asked without streaming"
        super().__init__(f"{model} sent an empty reply (no text and no tool call; {how})")


@dataclass(frozen=True)
class ModelProblem:
    """What happened and what the person can do; `retryable`: once the cause is gone;
    `transient`: at once; `proxy_retried`: a LiteLLM proxy answered after its retries."""

    cause: str
    advice: str
    retryable: bool = True
    transient: bool = False
    retry_after_s: float | None = None
    proxy_retried: bool = False

    @property
    def message(self) -> str:
        return f"{self.cause} {self.advice}".strip()


def describe_model_error(exc: BaseException) -> tuple[str, bool] | None:
    """(message, retryable) when `exc` is a failure of the model API, else None."""
    return None if (problem := model_problem(exc)) is None else (problem.message, problem.retryable)


def model_problem(exc: BaseException) -> ModelProblem | None:
    chain = list(_chain(exc))
    if isinstance(exc, EmptyReply):
        return ModelProblem(
            f"The model's reply was empty: {exc}.",
            "Retry; if it keeps happening, check the model server or the proxy in front of it "
            "(a proxy in front of a server that does not stream can lose the whole reply).",
        )
    if not any(_is_model_error(e) for e in chain):
        return None
    server = next((m for e in chain if (m := _server_message(e))), "")
    if (broke := next((e for e in chain if _stream_error_event(e)), None)) is not None:
        code = _get(broke, "body").get("code")
        return ModelProblem(
            f"The model's reply broke off in the middle of the stream (the server or proxy reported"
            f"{f' HTTP {code}' if code else ' an error'}: {server or 'no reason given'}).",
            "Retry; if it keeps happening, check the server or a proxy in front of it.",
            transient=True,
        )
    status = next((s for e in chain if (s := _status(e)) is not None), 0)
    said = f": {server}" if server else ""
    if status in (401, 403, 404):
        # Ollama's own words say what to do ("model 'x' not found, try pulling it first").
        pull = " (with Ollama: `ollama pull` it)" if "pull" not in server else ""
        key = "Check the API key (OPENAI_API_KEY or [model] api_key in gatehouse.toml), then retry."
        what, advice = {
            401: ("refused the credentials", key),
            403: ("refused access", key),
            404: (
                "does not know this model or endpoint",
                f"Check the model name{pull} and base URL, then retry.",
            ),
        }[status]
        return ModelProblem(f"The model API {what} (HTTP {status}{said}).", advice)
    if status == 429 or status >= 500:
        what, advice = (
            ("API is rate limiting requests", "Wait a moment, then retry.")
            if status == 429
            else ("server failed", "Retry; if it keeps failing, check the server.")
        )
        proxied = any(_from_litellm(e) for e in chain)
        if proxied:
            advice += " (The LiteLLM proxy in front of the model had already retried it.)"
        return ModelProblem(
            f"The model {what} (HTTP {status}{said}).",
            advice,
            transient=True,
            retry_after_s=next((r for e in chain if (r := _retry_after(e)) is not None), None),
            proxy_retried=proxied,
        )
    if 400 <= status < 500:
        # The same request would be refused again (too long, malformed, unsupported).
        too_long = _CONTEXT_WORDS.search(server.lower()) is not None
        advice = (
            "The conversation no longer fits the model's context window: compact it (`/compact` in "
            "`gatehouse chat`, `gatehouse compact ID`, `Session.submit(Compact(id))`, Compact now in the web app) or lower [compaction] max_tokens "
            "in gatehouse.toml so it happens on its own, then retry."
            if too_long
            else ""
        )
        return ModelProblem(
            f"The model API refused the request (HTTP {status}{said}).", advice, retryable=too_long
        )
    # The innermost error's own words ("[Errno 111] Connection refused").
    cause = next((_clip(t) for e in reversed(chain) if (t := _text(e))), "")
    url = next((u for e in chain if (u := _url(e))), "")
    where = f" at {url}" if url else ""
    for test, what, default, advice in _TRANSPORT_FAILURES:
        if any(test(e) for e in chain):
            return ModelProblem(
                f"{what.format(where=where)} ({cause or default}).", advice, transient=True
            )
    first = next(e for e in chain if _is_model_error(e))
    detail = server or _text(first) or cause
    return ModelProblem(
        f"The model API failed ({type(first).__name__}{': ' + detail if detail else ''}).",
        "Retry.",
        transient=bool(getattr(first, "is_retryable", False)),
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _package(e: BaseException) -> str:
    return (type(e).__module__ or "").split(".")[0]


def _is_model_error(e: BaseException) -> bool:
    return isinstance(e, lc.ModelError) or _package(e) in _TRANSPORT_MODULES


# (test, what happened, the cause when the error names none, advice); the first wins.
_TRANSPORT_FAILURES: tuple[tuple[Callable[[BaseException], bool], str, str, str], ...] = (
    (
        lambda e: (
            isinstance(e, lc.ModelTimeoutError | TimeoutError) or "Timeout" in type(e).__name__
        ),
        "The model server{where} did not answer in time",
        "timed out",
        "Retry, or raise [model] timeout in gatehouse.toml for a slow server.",
    ),
    (
        # The response had started (headers, maybe text) when the connection failed.
        lambda e: _transport(e, "RemoteProtocolError", "ReadError", "IncompleteRead", exact=True),
        "The connection to the model server{where} broke in the middle of the reply",
        "closed",
        "Retry; if it keeps happening, check the server or a proxy in front of it.",
    ),
    (
        lambda e: (
            isinstance(e, lc.ModelConnectionError | ConnectionError)
            or _transport(e, "Connect", "Protocol", "Network", "ReadError")
        ),
        "Could not reach the model server{where}",
        "connection error",
        "Check that it is running and the base URL is right, then retry.",
    ),
)


def _transport(e: BaseException, *names: str, exact: bool = False) -> bool:
    """A transport package's error whose class is (with `exact`) or names one of `names`."""
    name = type(e).__name__
    hit = name in names if exact else any(n in name for n in names)
    return hit and _package(e) in _TRANSPORT_MODULES


def _stream_error_event(e: BaseException) -> bool:
    """An error event inside a started stream (LiteLLM: the upstream stream broke): a
    bare `openai.APIError` with the event's error as its body and no HTTP status."""
    return (
        type(e).__name__ == "APIError"
        and _package(e) == "openai"
        and isinstance(_get(e, "body"), dict)
        and _get(e, "status_code") is None
    )


def _from_litellm(e: BaseException) -> bool:
    headers = _get(_get(e, "response"), "headers")
    try:
        return headers is not None and any(str(k).lower().startswith("x-litellm-") for k in headers)
    except TypeError:
        return False


def _status(e: BaseException) -> int | None:
    status = _get(e, "status_code")
    if isinstance(status, int):
        return status
    status = _get(_get(e, "response"), "status_code")
    return status if isinstance(status, int) and status >= 400 else None


def _server_message(e: BaseException) -> str:
    body = _get(e, "body")
    if isinstance(error := _get(e, "error"), str) and error.strip():  # ollama.ResponseError
        return _clip(error)
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message.strip():
            return _clip(message)
    if isinstance(body, str) and body.strip() and _status(e) is not None:
        return _clip(body)
    return ""


def _retry_after(e: BaseException) -> float | None:
    headers = _get(_get(e, "response"), "headers") or {}
    try:
        # The provider's own, as a LiteLLM proxy passes it on, when the proxy set none.
        for prefix in ("", "llm_provider-"):
            if (ms := headers.get(f"{prefix}retry-after-ms")) is not None:
                return max(0.0, float(ms) / 1000)
            if (s := headers.get(f"{prefix}retry-after")) is not None:
                return max(0.0, float(s))
    except (TypeError, ValueError):
        return None  # an HTTP date: the backoff decides instead
    return None


def _get(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # httpx's `.request` raises when the error has none attached
        return None


def _url(e: BaseException) -> str:
    url = _get(_get(e, "request"), "url")
    return "" if url is None else str(url).split("?", 1)[0]


def _text(e: BaseException) -> str:
    # Not a class's generic text.
    text = str(e).strip()
    return "" if text in ("", "Connection error.", "Request timed out.") else text


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"
