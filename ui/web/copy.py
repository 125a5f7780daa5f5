"""Copy buttons: a plain HTML button per message holding its text (a widget would cost a
script run per click), one script per page, an inline SVG icon (a font's would show its
name until loaded)."""

from __future__ import annotations

from html import escape

from gatehouse.graph.protocol.display import visible

# The clipboard API in a secure context (localhost, https), else the old selection copy.
COPY_SCRIPT = """<script>
if (!window.ghCopyInstalled) {
  window.ghCopyInstalled = true;
  const fallback = (text) => {
    const area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    try { return document.execCommand("copy"); } finally { area.remove(); }
  };
  document.addEventListener("click", async (event) => {
    const button = event.target.closest && event.target.closest("button.gh-copy");
    if (!button) return;
    event.preventDefault();
    const text = button.dataset.copy || "";
    let copied = false;
    try {
      if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); copied = true; }
    } catch (_) { copied = false; }
    if (!copied) copied = fallback(text);
    const label = button.dataset.label || button.innerHTML;
    button.dataset.label = label;
    button.textContent = copied ? "✓ Copied" : "Copy failed";
    setTimeout(() => { button.innerHTML = label; }, 1500);
  });
}
</script>"""

COPY_STYLE = """
button.gh-copy { background: none; border: none; padding: 0.1rem 0.3rem; font-size: 0.8rem;
  color: rgba(49, 51, 63, 0.6); cursor: pointer; border-radius: 0.3rem; }
button.gh-copy:hover { background: rgba(151, 166, 195, 0.15); color: inherit; }
button.gh-copy .gh-icon { width: 0.95rem; height: 0.95rem; vertical-align: -0.15rem; margin-right: 0.2rem;
  fill: currentColor; }
span.gh-branch { font-size: 0.85rem; color: rgba(49, 51, 63, 0.7); font-variant-numeric: tabular-nums; }
"""


# Material Symbols' "content_copy", as a path.
ICON = (
    '<svg class="gh-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M9 18q-.825 0-1.41'
    "2-.587Q7 16.825 7 16V4q0-.825.588-1.413Q8.175 2 9 2h9q.825 0 1.413.587Q20 3.175 20 4v12q0 .825-.587 1.413Q1"
    '8.825 18 18 18Zm0-2h9V4H9v12Zm-4 6q-.825 0-1.413-.587Q3 20.825 3 20V6h2v14h11v2Z"/></svg>'
)


def copy_html(text: str, *, what: str) -> str:
    """A copy button for `text` (`what` names it for screen readers and the tooltip)."""
    # Newlines as references (a blank line ends an HTML block); hidden characters copied shown.
    copied = escape(visible(text), quote=True).replace("\r", "&#13;").replace("\n", "&#10;")
    return (
        f'<button type="button" class="gh-copy" title="Copy this {what}" aria-label="Copy this {what}" '
        f'data-copy="{copied}">{ICON}Copy</button>'
    )
