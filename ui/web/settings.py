"""The settings page: the effective settings (`Session.info`) as read-only tables, with
anything like a secret (a URL's password, a `token=` query, a secret-named hook
argument) masked; the API key is only "set" or "not set"."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import streamlit as st

from gatehouse.graph import Session

HIDDEN = "•••• (hidden)"
SECRET_NAME = re.compile(
    r"(pass(word)?|secret|token|api[_-]?key|auth|credential|private)", re.IGNORECASE
)
MODE_WORDS = {"allow": "runs without asking", "ask": "asks first", "deny": "refused"}


def mask_url(value: str) -> str:
    """A URL without its password or secret-named query values."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if not parts.scheme or not parts.netloc:
        return value
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:{HIDDEN}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, HIDDEN if SECRET_NAME.search(k) else v) for k, v in pairs], safe="•() "
        )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def masked(value: Any, name: str = "") -> Any:
    """`value` with secrets masked: by the name they are stored under, or inside URLs."""
    if name and SECRET_NAME.search(name) and value not in (None, "", "set", "not set"):
        return HIDDEN
    if isinstance(value, dict):
        return {k: masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, name) for v in value]
    if isinstance(value, str):
        return mask_url(value)
    return value


def _text(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {_text(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value) or "—"
    return str(value)


def _table(rows: list[dict[str, Any]], index: str) -> None:
    import pandas as pd  # Streamlit's own dependency; only this page needs it

    st.table(pd.DataFrame(rows).set_index(index))


def general_rows(info: dict[str, Any]) -> list[dict[str, str]]:
    shown = masked(info)
    rows = [
        ("Model", shown.get("model")),
        ("API key", shown.get("api_key")),
        ("Database", shown.get("db")),
        ("Workspace folder", shown.get("workspace")),
        ("Command sandbox", shown.get("sandbox")),
        ("Compaction", shown.get("compaction")),
        ("Large tool outputs", shown.get("offload")),
        ("Webhook when a thread waits", shown.get("notify") or "off"),
        ("Read from", shown.get("config") or "defaults and environment"),
    ]
    return [{"Setting": k, "Value": _text(v)} for k, v in rows]


def rule_text(rule: dict[str, Any]) -> str:
    """One policy rule as a person reads it: "runs without asking when path matches notes/*"."""
    what = f"{rule.get('arg') or 'its main argument'} "
    what += (
        f"matches {rule['glob']}"
        if rule.get("glob")
        else f"matches the pattern /{rule.get('regex')}/"
        if rule.get("regex")
        else "is given"
    )
    return f"{MODE_WORDS.get(str(rule.get('mode')), rule.get('mode'))} when {what}"


def tool_rules(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The policy's rule for each tool (`Session.info["policy"]`, when a list)."""
    return [r for r in info.get("policy") or [] if isinstance(r, dict)]


def policy_rows(info: dict[str, Any]) -> list[dict[str, str]]:
    allow = info.get("shell_allow") or []
    rows = []
    for r in tool_rules(info):
        mode = MODE_WORDS.get(str(r.get("mode")), str(r.get("mode")))
        if r.get("tool") == "run_command" and allow and r.get("mode") == "ask":
            mode += ", except commands on the allow list (below)"
        rules = [rule_text(x) for x in r.get("rule_list") or [] if isinstance(x, dict)]
        rows.append(
            {
                "Tool": str(r.get("tool")),
                "Risk": str(r.get("risk")),
                "When the model calls it": mode,
                "Rules on its arguments": "; ".join(rules) or str(r.get("rules") or "—"),
            }
        )
    return rows


def free_rows(info: dict[str, Any]) -> list[dict[str, str]]:
    """What runs without anyone asked, and why."""
    rows = []
    for r in tool_rules(info):
        tool = str(r.get("tool"))
        if r.get("mode") == "allow":
            why = "read-only tool" if r.get("risk") == "read" else "the policy allows it"
            rows.append({"What": f"every {tool} call", "Why": why})
        for rule in r.get("rule_list") or []:
            if isinstance(rule, dict) and rule.get("mode") == "allow":
                rows.append({"What": f"{tool}: {rule_text(rule)}", "Why": "a policy rule"})
    for prefix in info.get("shell_allow") or []:
        rows.append(
            {
                "What": f"run_command: {prefix} …",
                "Why": "on the allow list ([tools] shell_allow): one simple command, "
                "inside the workspace, read-only, no network",
            }
        )
    return rows


def hook_rows(info: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for point, entries in masked(info.get("hooks") or {}).items():
        for entry in entries:
            if isinstance(entry, dict):
                what, args = entry.get("path", "?"), entry.get("args")
            else:
                what, args = entry, None
            rows.append({"When": str(point), "Hook": _text(what), "Arguments": _text(args)})
    return rows


def settings_page(session: Session) -> None:
    info = session.info
    st.header(":material/settings: Settings")
    st.caption(
        "The effective settings of this app (read-only). Change them in gatehouse.toml or the "
        "environment (OPENAI_API_KEY, OPENAI_BASE_URL, GATEHOUSE_MODEL, …), then restart. "
        "Secrets are never shown."
    )
    _table(general_rows(info), "Setting")
    st.subheader("Policy")
    if rows := policy_rows(info):
        st.caption(
            "Which calls ask for a person's approval. Read-only tools run without asking unless "
            "the policy says otherwise; a `deny` refuses without asking."
        )
        _table(rows, "Tool")
        st.markdown("**What runs without asking, and why**")
        st.caption(
            "A command on the allow list runs freely only as one simple command (no `;`, `&&`, "
            "pipes or redirections), with no argument outside the workspace, read-only and "
            "without network; any other command asks."
        )
        _table(free_rows(info) or [{"What": "nothing", "Why": "every call asks"}], "What")
    elif isinstance(info.get("policy"), str):
        st.code(str(info["policy"]), language="text")
    else:
        st.caption("No policy summary available.")
    st.subheader("Hooks")
    if rows := hook_rows(info):
        _table(rows, "When")
    else:
        st.caption("No hooks configured ([hooks] in gatehouse.toml).")
    st.subheader("Token usage per thread")
    usage_rows = [
        {
            "thread": t.title,
            "input tokens": int(usage.get("input_tokens", 0)),
            "output tokens": int(usage.get("output_tokens", 0)),
            "cost ($)": usage.get("cost"),
        }
        for t in session.thread_list(limit=100).threads
        for usage in [session.view(t.thread_id).usage]
    ]
    if usage_rows:
        st.dataframe(usage_rows, hide_index=True, width="stretch")
    else:
        st.caption("No threads yet.")
