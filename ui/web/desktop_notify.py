"""Desktop notifications (opt-in, per tab) when a thread starts waiting: on each live
update a script notifies once per new pause (sessionStorage), not for the thread on
screen nor pauses older than the toggle. Needs https or localhost and permission."""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import streamlit as st

from gatehouse.graph import Session
from gatehouse.graph.protocol.threads import printable

TOGGLE_KEY = "desktop-notify"
_SINCE_KEY = "desktop-notify-since"

_SCRIPT = """<div id="gh-notify-status" style="font-size: 0.8rem; opacity: 0.7"></div>
<script>
(() => {
  const data = DATA;
  const say = (text) => { const el = document.getElementById("gh-notify-status"); if (el) el.textContent = text; };
  if (!("Notification" in window)) {
    say("This browser offers no desktop notifications on this page (they need https or localhost).");
    return;
  }
  const asked = Notification.permission === "default" ? Notification.requestPermission()
                                                      : Promise.resolve(Notification.permission);
  asked.then((permission) => {
    if (permission !== "granted") {
      say("The browser blocks notifications for this page: allow them in its site settings.");
      return;
    }
    say("");
    const seen = new Set(JSON.parse(sessionStorage.getItem("gh-notified") || "[]"));
    for (const item of data.items) {
      if (seen.has(item.key)) continue;
      seen.add(item.key);
      if (item.thread === data.current && document.visibilityState === "visible") continue;
      const note = new Notification(data.title, {body: item.body, tag: "gatehouse-" + item.thread});
      note.onclick = () => { window.focus(); window.location.assign(item.url); note.close(); };
    }
    sessionStorage.setItem("gh-notified", JSON.stringify([...seen].slice(-500)));
  });
})();
</script>"""


def _remember_since() -> None:
    # Only pauses that begin after the toggle is turned on are news.
    st.session_state[_SINCE_KEY] = time.time() if st.session_state.get(TOGGLE_KEY) else None


def desktop_notifications(session: Session, current_thread: str | None) -> None:
    with st.sidebar:
        if not st.toggle(
            ":material/notifications: Desktop notifications",
            key=TOGGLE_KEY,
            on_change=_remember_since,
            help="Show a desktop notification when a thread starts waiting for a decision "
            "(for this browser tab, while it is open).",
        ):
            return
        since = st.session_state.get(_SINCE_KEY) or 0.0
        items = [
            {
                "key": f"{t.thread_id}@{t.pending_since}",
                "thread": t.thread_id,
                "body": printable(t.title)[:120],
                "url": "?thread=" + quote(t.thread_id, safe=""),
            }
            for t in session.thread_list().awaiting_approval
            if t.pending_since is not None and t.pending_since >= since
        ]
        data = {"title": "Gatehouse: approval needed", "current": current_thread, "items": items}
        # JSON inside <script>: "<" escaped so no text can close the tag.
        payload = json.dumps(data).replace("<", "\\u003c")
        st.html(_SCRIPT.replace("DATA", payload, 1), unsafe_allow_javascript=True)
