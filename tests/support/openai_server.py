"""A tiny local server that speaks the OpenAI chat-completions wire protocol.

`graph.testing.ScriptedModel` stands in for the model object, so it never touches the
code that turns HTTP bytes into messages. This server lets the real
`langchain_openai.ChatOpenAI` (and the `openai` client under it) run end to end with
no network: streamed SSE deltas, tool-call arguments split across chunks, the final
usage chunk and HTTP errors, all as OpenAI sends them.

Turn k of a conversation (k assistant messages already in the request) gets
`script[k]`, so answers are the same in any process and on retries; past the end of
the script the reply is "Done.". A reply is a str, a dict
`{"content", "tool_calls": [{"id", "name", "arguments": str | dict}], "usage":
{"prompt_tokens", "completion_tokens"}, "status": int}` (status: answer with that HTTP
error instead) or a callable `(request_json) -> reply`. Like OpenAI, a request whose
tool calls and tool messages do not pair up is refused with a 400.

What real servers do that OpenAI does not, one key of a reply dict each:
- `"stream": False`: answer a streaming request with one JSON body (some proxies);
- `"cut": True`: end the stream after about two thirds of its events (or after the
  first `cut` events when an int; the role chunk is the first), with no
  `finish_reason` and no `[DONE]` (a stream cut short, the connection closed cleanly);
- `"drop": True`: the same, but the connection breaks (fewer bytes than announced);
- `"reasoning": str`: send the thinking as `reasoning_content` deltas (vLLM, DeepSeek)
  before the answer, or under `"reasoning_field"` (e.g. "reasoning": newer vLLM, Ollama);
  `<think>` blocks need no key: put them in `content`;
- `"chunk_chars": int`: size of the content pieces (default 4: tags split across chunks);
- `"args_chars": int`: stream each tool call's arguments in pieces of this size, as a
  server streaming token by token does (default: three pieces);
- `"delay": float`: seconds of silence after the headers, before the first token;
- `"headers": dict`: extra response headers (e.g. `Retry-After` with a 429);
- `"finish": str`: the finish reason to send (e.g. "length": stopped at max_tokens);
- `"usage_chunk": False`: leave out the usage chunk even when it was asked for;
- `"error_event": int`: after that many events, an error event inside the stream and
  the end of it (how LiteLLM reports an upstream stream that broke midway);
- `"pace": float`: seconds between events (so a proxy forwards the first ones before
  a `drop` breaks the stream).
`closed_port_url()` gives a base URL where nothing listens (connection refused).

`/v1/responses` (OpenAI's Responses API, `ChatOpenAI(use_responses_api=True)`) answers
the same script with text, and `"reasoning"` as a reasoning item's summary (streamed as
`response.reasoning_summary_text.delta` events); turns count `input` items whose role
is "assistant".
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Reply = str | dict[str, Any] | Callable[[dict[str, Any]], Any]
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}


def _pieces(text: str, parts: int) -> list[str]:
    """Split `text` into `parts` pieces (some may be empty when text is short)."""
    size = -(-len(text) // parts) if text else 0
    return [text[i * size : (i + 1) * size] for i in range(parts)] if size else [""] * parts


class FakeOpenAI:
    """`with FakeOpenAI(["Hi!"]) as server: ChatOpenAI(base_url=server.base_url, ...)`."""

    def __init__(self, script: list[Reply] | None = None, *, fallback: str = "Done.") -> None:
        self.script: list[Reply] = list(script or [])
        self.fallback = fallback
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    return self._json(404, {"error": {"message": "not found", "type": "not_found"}})
                self._json(200, {"object": "list", "data": [{"id": "gpt-test", "object": "model"}]})

            def do_POST(self) -> None:
                path = self.path.rstrip("/")
                if path not in ("/v1/chat/completions", "/v1/responses"):
                    return self._json(404, {"error": {"message": "not found", "type": "not_found"}})
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with fake._lock:
                    fake.requests.append(body)
                    n = len(fake.requests)
                if path == "/v1/responses":
                    return self._responses(body, n)
                if problem := _unpaired_tool_messages(body.get("messages", [])):
                    return self._json(
                        400, {"error": {"message": problem, "type": "invalid_request_error"}}
                    )
                reply = fake._reply(body)
                headers = reply.get("headers") or {}
                if status := reply.get("status"):
                    kind = ERROR_TYPES.get(status, "server_error")
                    message = reply.get("content") or f"fake error {status}"
                    return self._json(
                        status, {"error": {"message": message, "type": kind}}, headers
                    )
                if not body.get("stream") or reply.get("stream") is False:
                    time.sleep(reply.get("delay") or 0)
                    return self._json(200, _completion(reply, body, n), headers)
                events = [f"data: {e}\n\n".encode() for e in _chunks(reply, body, n)]
                if cut := reply.get("cut") or reply.get("drop"):
                    events = events[: cut if cut is not True else max(2, len(events) * 2 // 3)]
                if (at := reply.get("error_event")) is not None:
                    error = {
                        "error": {
                            "message": "upstream stream broke",
                            "type": None,
                            "param": None,
                            "code": "500",
                        }
                    }
                    events = [*events[:at], f"data: {json.dumps(error)}\n\n".encode()]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                for name, value in headers.items():
                    self.send_header(name, str(value))
                if reply.get("drop"):
                    # Announce more than is sent: the client sees a broken connection.
                    self.send_header("Content-Length", str(sum(map(len, events)) + 1000))
                else:
                    self.send_header("Connection", "close")
                self.end_headers()
                for i, event in enumerate(events):
                    if i == 1:
                        time.sleep(reply.get("delay") or 0)  # after the role chunk: the first token
                    elif i > 1 and reply.get("pace"):
                        time.sleep(reply["pace"])
                    self.wfile.write(event)
                    self.wfile.flush()

            def _responses(self, body: dict[str, Any], n: int) -> None:
                """OpenAI's Responses API, enough of it for text and reasoning summaries."""
                reply = fake._reply({"messages": body.get("input") or []})
                events = list(_response_events(reply, body, n))
                if not body.get("stream"):
                    return self._json(200, events[-1][1]["response"])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for kind, data in events:
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

            def _json(
                self, status: int, payload: dict[str, Any], headers: dict[str, Any] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, str(value))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        item: Any = self.script[turn] if turn < len(self.script) else self.fallback
        while callable(item):
            item = item(body)
        reply = {"content": item} if isinstance(item, str) else dict(item)
        calls = [
            {
                **c,
                "arguments": c["arguments"]
                if isinstance(c["arguments"], str)
                else json.dumps(c["arguments"]),
            }
            for c in reply.get("tool_calls") or []
        ]
        reply["tool_calls"] = calls
        reply["content"] = reply.get("content") or ""
        words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
        usage = {
            "prompt_tokens": words,
            "completion_tokens": len(reply["content"].split()) + len(calls),
        }
        usage.update(reply.get("usage") or {})
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        reply["usage"] = usage
        return reply


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout, a retry) closed the socket mid-reply: expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def closed_port_url() -> str:
    """A base URL on localhost where nothing listens: requests are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _unpaired_tool_messages(messages: list[dict[str, Any]]) -> str | None:
    """OpenAI refuses a request whose tool messages and tool calls do not pair up."""
    waiting: set[str] = set()
    for m in messages:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                return f"tool message {m.get('tool_call_id')!r} answers no preceding tool call"
            waiting.discard(m["tool_call_id"])
            continue
        if waiting:
            break
        waiting = (
            {c["id"] for c in m.get("tool_calls") or []} if m.get("role") == "assistant" else set()
        )
    return f"tool calls without a tool message: {sorted(waiting)}" if waiting else None


def _envelope(kind: str, body: dict[str, Any], n: int, choices: list[Any]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake{n}",
        "object": kind,
        "created": 1700000000 + n,
        "model": body.get("model", "gpt-test"),
        "system_fingerprint": "fp_fake",
        "choices": choices,
    }


def _finish(reply: dict[str, Any]) -> str:
    return reply.get("finish") or ("tool_calls" if reply["tool_calls"] else "stop")


def _completion(reply: dict[str, Any], body: dict[str, Any], n: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply["content"] or None,
        "refusal": None,
    }
    if reply.get("reasoning"):
        message[reply.get("reasoning_field") or "reasoning_content"] = reply["reasoning"]
    if reply["tool_calls"]:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in reply["tool_calls"]
        ]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
    return {**_envelope("chat.completion", body, n, [choice]), "usage": reply["usage"]}


def _chunks(reply: dict[str, Any], body: dict[str, Any], n: int) -> Iterator[str]:
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        out = _envelope(
            "chat.completion.chunk",
            body,
            n,
            [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        )
        return json.dumps({**out, "usage": None} if with_usage else out)

    yield chunk({"role": "assistant", "content": ""})
    size = reply.get("chunk_chars") or 4
    thinking = reply.get("reasoning") or ""
    for i in range(0, len(thinking), size):
        yield chunk(
            {
                "content": None,
                reply.get("reasoning_field") or "reasoning_content": thinking[i : i + size],
            }
        )
    text = reply["content"]
    for i in range(0, len(text), size):
        yield chunk({"content": text[i : i + size]})
    for index, call in enumerate(reply["tool_calls"]):
        arguments, step = call["arguments"], reply.get("args_chars")
        first, *rest = (
            [arguments[i : i + step] for i in range(0, len(arguments), step)] or [""]
            if step
            else _pieces(arguments, 3)
        )
        fn = {"name": call["name"], "arguments": first}
        yield chunk(
            {"tool_calls": [{"index": index, "id": call["id"], "type": "function", "function": fn}]}
        )
        for piece in rest:
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(reply))
    if with_usage and reply.get("usage_chunk", True):
        yield json.dumps(
            {**_envelope("chat.completion.chunk", body, n, []), "usage": reply["usage"]}
        )
    yield "[DONE]"


def _response_events(
    reply: dict[str, Any], body: dict[str, Any], n: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Responses API's stream for a text reply with an optional reasoning summary;
    the last event carries the whole response."""
    seq = iter(range(10_000))
    base = {
        "id": f"resp_fake{n}",
        "object": "response",
        "created_at": 1700000000 + n,
        "model": body.get("model", "gpt-test"),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [],
    }
    yield (
        "response.created",
        {
            "type": "response.created",
            "sequence_number": next(seq),
            "response": {**base, "status": "in_progress"},
        },
    )
    output: list[dict[str, Any]] = []
    summary = reply.get("reasoning") or ""
    if summary:
        item = {"type": "reasoning", "id": f"rs_fake{n}", "summary": []}
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": len(output),
                "item": item,
            },
        )
        part = {"item_id": item["id"], "output_index": len(output), "summary_index": 0}
        yield (
            "response.reasoning_summary_part.added",
            {
                "type": "response.reasoning_summary_part.added",
                "sequence_number": next(seq),
                **part,
                "part": {"type": "summary_text", "text": ""},
            },
        )
        for i in range(0, len(summary), 8):
            yield (
                "response.reasoning_summary_text.delta",
                {
                    "type": "response.reasoning_summary_text.delta",
                    "sequence_number": next(seq),
                    **part,
                    "delta": summary[i : i + 8],
                },
            )
        output.append({**item, "summary": [{"type": "summary_text", "text": summary}]})
    message = {
        "type": "message",
        "id": f"msg_fake{n}",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    index = len(output)
    yield (
        "response.output_item.added",
        {
            "type": "response.output_item.added",
            "sequence_number": next(seq),
            "output_index": index,
            "item": message,
        },
    )
    text = reply["content"]
    for i in range(0, len(text), 4):
        yield (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "sequence_number": next(seq),
                "item_id": message["id"],
                "output_index": index,
                "content_index": 0,
                "delta": text[i : i + 4],
                "logprobs": [],
            },
        )
    output.append(
        {
            **message,
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }
    )
    usage = reply["usage"]
    done = {
        **base,
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": len(summary.split())},
        },
    }
    yield (
        "response.completed",
        {"type": "response.completed", "sequence_number": next(seq), "response": done},
    )
