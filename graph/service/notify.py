"""A ping when a person must decide: a webhook told about every new pause.

When a thread starts waiting for a decision — from the web app, the terminal,
LangGraph Server, Studio, the SDK or a raw graph — the saver announces the pause at
the one place it reaches storage (graph/store/delta_reads.py `announce_pause`), and
the notifier here POSTs JSON to the configured webhook:

    {"event": "approval_required", "thread_id", "interrupt_id", "title",
     "calls": [{"tool_call_id", "name", "args", "risk"}], "risks": [...], "link"}

signed with the shared secret (`X-Gatehouse-Signature: sha256=<HMAC-SHA256 of the
body>`), from a background thread, retried with backoff (0.5 s, 1 s, 2 s, … up to
`attempts`). Each pause is claimed in the notification log (graph/store/notifications.py)
before it is sent, so it pings once however many processes save it, and the log
keeps how delivery went. `[notify] risks` / `tools` choose which pauses ping (e.g.
only `execute`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from contextlib import suppress
from typing import Any
from urllib.parse import quote

from graph.service.config import Settings
from graph.store.notifications import NotificationLog

SIGNATURE_HEADER = "X-Gatehouse-Signature"
BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0


def sign(secret: str, body: bytes) -> str:
    """The signature header's value for `body`: what a receiver recomputes and compares."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookNotifier:
    """A pause listener (`saver.pause_listeners`) that pings the webhook."""

    def __init__(self, settings: Settings, log: NotificationLog) -> None:
        if not settings.notify_webhook:
            raise ValueError("[notify] webhook is not set")
        self.url = settings.notify_webhook
        self.secret = settings.notify_secret or ""
        self.risks = {str(r) for r in settings.notify_risks or ()}
        self.tools = {str(t) for t in settings.notify_tools or ()}
        self.link = (settings.notify_link or "").rstrip("/")
        self.attempts = max(1, int(settings.notify_attempts))
        self.log = log
        self._threads: list[threading.Thread] = []

    def __call__(self, thread_id: str, interrupts: Sequence[Any]) -> None:
        for pending in interrupts:
            payload = self.payload(thread_id, pending)
            if payload is not None and self.log.claim(
                thread_id, payload["interrupt_id"], self.url, payload
            ):
                worker = threading.Thread(
                    target=self.deliver,
                    args=(thread_id, payload),
                    daemon=True,
                    name=f"gatehouse-notify-{thread_id}",
                )
                self._threads.append(worker)
                worker.start()

    def payload(self, thread_id: str, pending: Any) -> dict[str, Any] | None:
        """What the webhook gets for one interrupt; None when the policy says no ping."""
        value, interrupt_id = getattr(pending, "value", None), getattr(pending, "id", None)
        if not isinstance(value, dict) or not interrupt_id:
            return None
        if isinstance(value.get("action_requests"), list):
            calls = [
                {
                    "tool_call_id": a.get("tool_call_id"),
                    "name": a.get("name"),
                    "args": a.get("args"),
                    "risk": a.get("risk"),
                }
                for a in value["action_requests"]
            ]
            event = "approval_required"
        elif isinstance(value.get("outcome_unknown"), dict):  # a call a crash cut off: did it run?
            call = value["outcome_unknown"]
            calls = [
                {
                    "tool_call_id": call.get("tool_call_id"),
                    "name": call.get("name"),
                    "args": call.get("args"),
                    "risk": None,
                }
            ]
            event = "outcome_unknown"
        else:
            return None
        if self.risks and not any(c["risk"] in self.risks for c in calls):
            return None
        if self.tools and not any(c["name"] in self.tools for c in calls):
            return None
        return {
            "event": event,
            "thread_id": thread_id,
            "interrupt_id": str(interrupt_id),
            "calls": calls,
            "risks": sorted({str(c["risk"]) for c in calls if c["risk"]}),
            "link": f"{self.link}/?thread={quote(thread_id)}" if self.link else None,
            "created_at": time.time(),
        }

    def deliver(self, thread_id: str, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False, default=str).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "gatehouse-notify",
            "X-Gatehouse-Event": payload["event"],
            "X-Gatehouse-Delivery": payload["interrupt_id"],
        }
        if self.secret:
            headers[SIGNATURE_HEADER] = sign(self.secret, body)
        for attempt in range(1, self.attempts + 1):
            error = _post(self.url, body, headers)
            final = error is None or attempt == self.attempts
            with suppress(Exception):  # the log is best effort; the ping went (or not)
                self.log.attempted(thread_id, payload["interrupt_id"], error=error, final=final)
            if final:
                return
            time.sleep(min(MAX_BACKOFF_S, BACKOFF_S * 2 ** (attempt - 1)))

    def wait(self, timeout: float = 10.0) -> None:
        """Wait for deliveries under way (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        for worker in list(self._threads):
            worker.join(max(0.0, deadline - time.monotonic()))


def _post(url: str, body: bytes, headers: dict[str, str]) -> str | None:
    """None when the webhook took it (2xx), else what went wrong."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the configured URL
            status = response.status
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except Exception as exc:  # noqa: BLE001 - any failure is retried
        return f"{type(exc).__name__}: {exc}"
    return None if 200 <= status < 300 else f"HTTP {status}"


def attach_notifier(checkpointer: Any, settings: Settings) -> WebhookNotifier | None:
    """Ping `settings.notify_webhook` on every pause `checkpointer` saves (when set)."""
    listeners = getattr(checkpointer, "pause_listeners", None)
    if not settings.notify_webhook or listeners is None:
        return None
    notifier = WebhookNotifier(settings, NotificationLog(settings.db))
    listeners.append(notifier)
    return notifier
