"""A webhook ping on every new pause: written to the database's outbox, then POSTed
signed (`X-Gatehouse-Signature`), at least once, with backoff, by every process with
the webhook. Gap: the outbox row is written after the pause is saved, not with it.
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

from gatehouse.graph.protocol.display import visible
from gatehouse.graph.service.config import Settings
from gatehouse.graph.store.notifications import Notification, NotificationLog

SIGNATURE_HEADER = "X-Gatehouse-Signature"
BACKOFF_S = 0.5
MAX_BACKOFF_S = 300.0
LEASE_S = 60.0  # a row taken for a try is free again after this (a try takes <= 10 s)
POLL_S = 30.0  # how often a process looks for pings other processes left
FLUSH_S = 3.0  # what a process that ends gives the pings due now


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def shown(value: Any) -> Any:
    """`value` with every string as a person is shown it (graph/protocol/display.py)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {shown(k): shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    return value


class WebhookNotifier:
    """A pause listener that writes pings to the outbox, and the worker that delivers them."""

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
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._run, daemon=True, name="gatehouse-notify")
        self._worker.start()  # pings an earlier process left are due now

    def __call__(self, thread_id: str, interrupts: Sequence[Any]) -> None:
        for pending in interrupts:
            payload = self.payload(thread_id, pending)
            if payload is not None and self.log.claim(
                thread_id, payload["interrupt_id"], self.url, payload
            ):
                self._wake.set()

    def payload(self, thread_id: str, pending: Any) -> dict[str, Any] | None:
        """What the webhook gets for one interrupt; None when the policy says no ping."""
        value, interrupt_id = getattr(pending, "value", None), getattr(pending, "id", None)
        if not isinstance(value, dict) or not interrupt_id:
            return None
        if isinstance(value.get("action_requests"), list):
            event, requests = "approval_required", value["action_requests"]
        elif isinstance(value.get("outcome_unknown"), dict):  # a call a crash cut off: did it run?
            event, requests = "outcome_unknown", [{**value["outcome_unknown"], "risk": None}]
        else:
            return None
        calls = [{k: a.get(k) for k in ("tool_call_id", "name", "args", "risk")} for a in requests]
        if self.risks and not any(c["risk"] in self.risks for c in calls):
            return None
        if self.tools and not any(c["name"] in self.tools for c in calls):
            return None
        return {
            "event": event,
            "thread_id": thread_id,
            "interrupt_id": str(interrupt_id),
            "calls": shown(calls),
            "risks": sorted({str(c["risk"]) for c in calls if c["risk"]}),
            "link": f"{self.link}/?thread={quote(thread_id)}" if self.link else None,
            "created_at": time.time(),
        }

    def _try(self, row: Notification) -> None:
        body = json.dumps(row.payload, ensure_ascii=False, default=str).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "gatehouse-notify",
            "X-Gatehouse-Event": str(row.payload.get("event")),
            "X-Gatehouse-Delivery": row.interrupt_id,
        }
        if self.secret:
            headers[SIGNATURE_HEADER] = sign(self.secret, body)
        error = _post(self.url, body, headers)
        tries = row.attempts + 1
        retry_at = time.time() + min(MAX_BACKOFF_S, BACKOFF_S * 2 ** (tries - 1))
        final = error is None or tries >= self.attempts
        self.log.attempted(
            row.thread_id, row.interrupt_id, error=error, final=final, retry_at=retry_at
        )

    def _run(self) -> None:
        while True:
            with suppress(Exception):  # a database hiccup: try again at the next wake
                for row in self.log.take_due(self.url, LEASE_S):  # any process's, due now
                    self._try(row)
            if self._stop.is_set():
                return
            wait = POLL_S
            with suppress(Exception):
                due = self.log.next_due(self.url)
                if due is not None:
                    wait = min(POLL_S, max(0.0, due - time.time()))
            self._wake.wait(wait)
            self._wake.clear()

    def close(self, timeout: float = FLUSH_S) -> None:
        """Give the pings due now up to `timeout` seconds, then stop."""
        self._stop.set()
        self._wake.set()
        self._worker.join(timeout)
        if not self._worker.is_alive():
            self.log.close()


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
