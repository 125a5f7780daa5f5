"""The edit preview follows the arguments as they are typed.

Streamlit sends a text area's value to the script only when it loses focus or on
Ctrl+Enter, so the preview of an edited call (a diff of the file it writes) would show
the old arguments while the person types. This script, installed once per page,
watches the approval card's argument fields (`…-args` keys) and, after a pause in
typing, commits the text the way Ctrl+Enter does: the card's script run then checks
the arguments and redraws the preview, or flags them as invalid.
"""

from __future__ import annotations

PAUSE_MS = 300

LIVE_EDIT_SCRIPT = """<script>
if (!window.ghLiveEditInstalled) {
  window.ghLiveEditInstalled = true;
  const timers = new WeakMap();
  const isArgs = (el) => {
    const box = el.closest && el.closest("[class*='st-key-']");
    return !!box && /(^|\\s)st-key-\\S+-args(\\s|$)/.test(box.className);
  };
  document.addEventListener("input", (event) => {
    const area = event.target;
    if (!(area instanceof HTMLTextAreaElement) || !isArgs(area)) return;
    clearTimeout(timers.get(area));
    timers.set(area, setTimeout(() => {
      if (!area.isConnected) return;
      area.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", code: "Enter", keyCode: 13, which: 13,
                                                     ctrlKey: true, bubbles: true, cancelable: true}));
    }, PAUSE));
  }, true);
}
</script>""".replace("PAUSE", str(PAUSE_MS))

__all__ = ["LIVE_EDIT_SCRIPT", "PAUSE_MS"]
