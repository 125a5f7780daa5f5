"""The web app's speed at any thread length, in real headless Chromium (issue 23).

`uv run python -m bench.web` (see __main__.py). Modules, one concern each:

- build.py     long threads through the Session API, cached per size
- model.py     the model the served app answers with (demo + a timed streaming reply)
- server.py    `gatehouse ui` on a copy of a built thread
- contract.py  what the harness expects of the page: selectors and DOM checks
- browser.py   Chromium through Playwright; a tab with deadlines
- probe.py     WebSocket frames (bytes, script runs), Chromium counters, CPU
- measure.py   the measurements per size
- report.py    the table and the JSON
- profile.py   where the time goes: server script runs (timed_server.py) and the browser
"""
