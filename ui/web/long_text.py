"""Long text with "Show all": a history message's head (a 200 KB message costs every
page run its bytes) and a card's value. Copy and export carry the whole text."""

from __future__ import annotations

import hashlib

import streamlit as st

from gatehouse.graph import MessageView
from gatehouse.graph.protocol.display import shown
from gatehouse.ui.web.safe_text import markdown
from gatehouse.ui.web.tool_blocks import said_html

HEAD_CHARS = 20_000
# Cut at the last line break (or space) within this many characters of the limit.
NEAR = 2_000


def draw_message_text(thread_id: str, message: MessageView, *, as_written: bool = False) -> None:
    """The message (drawn safe), or its head and "Show all"; `as_written`: not Markdown."""
    text = message.content
    ident = message.id or hashlib.sha1(text.encode()).hexdigest()[:16]
    key = f"show-all-{thread_id}-{ident}"
    head = text
    if len(text) > HEAD_CHARS:
        cut = text.rfind("\n", HEAD_CHARS - NEAR, HEAD_CHARS)
        if cut <= 0:
            cut = text.rfind(" ", HEAD_CHARS - NEAR, HEAD_CHARS)
        head = text[: cut if cut > 0 else HEAD_CHARS]
    shown = text if head == text or st.session_state.get(key) else head + " …"
    st.markdown(said_html(shown) if as_written else markdown(shown), unsafe_allow_html=as_written)
    if shown != text:
        _show_all(
            key,
            f"Showing the first {len(head):,} of {len(text):,} characters.",
            "Draw the whole message (copy and export always carry all of it)",
        )


def _show_all(key: str, said: str, why: str) -> None:
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        st.caption(said, width="content")
        st.button(
            ":material/unfold_more: Show all",
            key=key + "-button",
            type="tertiary",
            help=why,
            on_click=st.session_state.__setitem__,
            args=(key, True),
        )


def card_block(text: str, key: str, language: str = "text") -> bool:
    """A card's value by the card rule (gatehouse.graph.protocol.display.shown): whole, or its head,
    the rest's size and "Show all"; True when all of it is in view (decidable)."""
    part = shown(text)
    whole = part.complete or bool(st.session_state.get(key))
    st.code(part.whole if whole else part.head, language=language, wrap_lines=True)
    if not whole:
        _show_all(
            key,
            f"… {part.hidden}: open it all to decide.",
            "Draw all of it: only what you have seen can be approved",
        )
    return whole
