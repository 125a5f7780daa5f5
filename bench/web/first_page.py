"""The web app's first page as a person meets it (issue 36): from `uv run gatehouse`
(the process start) to a usable chat input, in real headless Chromium.

Per sample: a fresh folder (new database, seeded workspace), the clock started just
before `uv run --project ROOT gatehouse --port N` is spawned (the user's command; the
bare console script when `uv` is not on PATH). The browser is already running, as a
person's is; it opens the page as soon as the server answers, the way the sign-in
link `gatehouse` opens does. Times, all from the process start:

- listening_s: the server answers `/_stcore/health` (polled every POLL_S);
- loading_s: a loading state ("Loading Gatehouse…", ui/web/loading.py: in the served
  HTML, or the app's own) first in the page (a MutationObserver installed before the
  page's own scripts, then the next animation frame);
- input_s: the chat input is visible and enabled (contract.CHAT_INPUT_READY_JS): the
  first page is usable (a server's first page draws it before the page's code has
  loaded, ui/web/chat_input.py);
- page_s: the whole page is drawn: the sidebar (the thread list) is visible and the
  loading state gone;
- server_cpu_s: CPU seconds of the whole process tree (uv, the CLI, Streamlit) until then.

Whether PYTHONDONTWRITEBYTECODE was set is recorded: with it set, every import
compiles from source in each process.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from bench.web import contract
from bench.web.browser import VIEWPORT, Tab
from bench.web.build import ROOT, seed_workspace
from bench.web.server import free_port, install_secret_of, running, sign_in

TARGET_S = 3.0
POLL_S = 0.05
# The loading state in the served HTML (ui/web/loading.py) or the app's own.
LOADING_CSS = "#gh-boot, .gh-loading"

# Installed before any script of each document: the epoch ms at which the loading
# state was first in the DOM, and the frame after that (about when it is painted).
WATCH_LOADING_JS = f"""
(() => {{
  const seen = () => {{
    if (window.__ghLoading || !document.querySelector('{LOADING_CSS}')) return false;
    const dom = performance.timeOrigin + performance.now();
    window.__ghLoading = {{dom}};
    requestAnimationFrame(() => {{ window.__ghLoading.frame = performance.timeOrigin + performance.now(); }});
    return true;
  }};
  const observer = new MutationObserver(() => {{ if (seen()) observer.disconnect(); }});
  observer.observe(document, {{childList: true, subtree: true}});
}})();
"""
LOADING_SEEN_JS = "() => window.__ghLoading || null"
PAGE_DRAWN_JS = f"""
() => {{
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  return !!sidebar && sidebar.checkVisibility() && !document.querySelector('{LOADING_CSS}');
}}
"""


def gatehouse_command(port: int) -> list[str]:
    """`uv run gatehouse --port N` on this project, from any folder."""
    uv = shutil.which("uv")
    if uv:
        return [uv, "run", "--project", str(ROOT), "gatehouse", "--port", str(port)]
    script = Path(sys.executable).parent / "gatehouse"
    return [str(script), "--port", str(port)]


def _tree_cpu(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _env(folder: Path, workspace: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "GATEHOUSE_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY")
    }
    env.update(
        GATEHOUSE_DB=str(folder / "gatehouse.db"),
        GATEHOUSE_WORKSPACE=str(workspace),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def one_sample(browser: Any, timeout_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gh-web-first-") as tmp:
        folder = Path(tmp)
        workspace = seed_workspace(folder / "workspace")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        context = browser.new_context(viewport=VIEWPORT)
        context.add_init_script(WATCH_LOADING_JS)
        try:
            t0 = time.time()
            cmd = gatehouse_command(port)
            with running(
                cmd,
                port,
                cwd=folder,
                env=_env(folder, workspace),
                log=folder / "server.log",
                timeout=timeout_s,
                interval=POLL_S,
            ) as (_url, process):
                listening = time.time()
                sign_in(context, url, install_secret_of(folder / "gatehouse.db"))
                tab = Tab(context, timeout_s)
                tab.act(lambda: tab.page.goto(url, wait_until="commit"), "the first page")
                tab.wait(contract.CHAT_INPUT_READY_JS, what="a usable chat input")
                usable = time.time()
                cpu = _tree_cpu(process.pid)
                tab.wait(PAGE_DRAWN_JS, what="the whole first page")
                drawn = time.time()
                loading = tab.page.evaluate(LOADING_SEEN_JS)
                tab.close()
        finally:
            context.close()
    painted = None
    if loading:
        painted = (loading.get("frame") or loading["dom"]) / 1000
    return {
        "listening_s": round(listening - t0, 3),
        "loading_s": None if painted is None else round(painted - t0, 3),
        "input_s": round(usable - t0, 3),
        "page_s": round(drawn - t0, 3),
        "server_cpu_s": round(cpu, 3),
        "command": " ".join(cmd[:1] and [Path(cmd[0]).name, *cmd[1:]]),
    }


def measure_first_page(playwright: Any, reps: int, timeout_s: float) -> dict[str, Any]:
    """`reps` samples (each a fresh process and folder); medians of each time."""
    from bench.web.browser import launch
    from bench.web.measure import median

    browser = launch(playwright)
    samples: list[dict[str, Any]] = []
    try:
        for rep in range(reps):
            sample = one_sample(browser, timeout_s)
            samples.append(sample)
            print(
                f"[web-bench] first page #{rep + 1}: loading state painted at "
                f"{sample['loading_s']} s, input usable at {sample['input_s']:.2f} s, "
                f"page drawn at {sample['page_s']:.2f} s "
                f"(server listening at {sample['listening_s']:.2f} s; "
                f"{sample['server_cpu_s']:.2f} s server CPU)",
                flush=True,
            )
    finally:
        browser.close()

    def med(key: str) -> float | None:
        values: list[float | None] = [s[key] for s in samples if s.get(key) is not None]
        middle = median(values) if values else None
        return None if middle is None else round(middle, 3)

    return {
        "samples": samples,
        "listening_median_s": med("listening_s"),
        "loading_median_s": med("loading_s"),
        "input_median_s": med("input_s"),
        "page_median_s": med("page_s"),
        "server_cpu_median_s": med("server_cpu_s"),
        "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
        "target_s": TARGET_S,
    }


def summary_line(result: dict[str, Any]) -> str:
    return (
        f"First page (`uv run gatehouse` to a usable chat input), median of "
        f"{len(result['samples'])}: loading state painted at {result['loading_median_s']} s, "
        f"input usable at {result['input_median_s']} s, the whole page drawn at "
        f"{result.get('page_median_s')} s (server listening at "
        f"{result['listening_median_s']} s; {result['server_cpu_median_s']} s CPU of the "
        f"server's processes); PYTHONDONTWRITEBYTECODE "
        f"{'set' if result['pythondontwritebytecode'] else 'not set'}."
    )


def target_row(result: dict[str, Any]) -> tuple[str, str, bool | None]:
    value = result.get("input_median_s")
    loading = result.get("loading_median_s")
    ok = None if value is None else value <= TARGET_S and loading is not None and loading < value
    return (
        f"first page: `uv run gatehouse` to a usable input <= {TARGET_S} s, loading state shown before",
        f"input {value} s, loading state {loading} s",
        ok,
    )
