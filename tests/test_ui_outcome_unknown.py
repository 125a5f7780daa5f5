"""The "outcome unknown" pause in both front ends, made for real.

A scripted model (`tests.support.outcome_model`) calls `run_command`, a default tool
that is not idempotent, so the journal records it before it runs. The pause comes
from real processes: `gatehouse send` pauses for approval, `gatehouse approve` with
`GATEHOUSE_CRASH_AT=before_tool` kills itself after the journal wrote "started" and
before the command ran, and `gatehouse resume` finds the unfinished call and pauses
with an outcome-unknown request. Then the web app (AppTest) or the CLI answers it.
The command appends to `hits.txt`: it must never exist, since it never ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_page import app_page

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "ui" / "web" / "app.py")
SCRIPT = Path(sys.executable).parent / "gatehouse"
FACTORY = "tests.support.outcome_model:model"
TIMEOUT = 30


def base_cmd() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "ws").mkdir()
    (tmp_path / "none.toml").write_text("")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    e.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        GATEHOUSE_CONFIG=str(tmp_path / "none.toml"),
        GATEHOUSE_MODEL_FACTORY=FACTORY,
        PYTHONPATH=str(ROOT),
    )
    e.pop("NO_COLOR", None)
    return e


def gh(
    env: dict[str, str], *args: str, code: int | None = None, input_text: str = "", **extra: str
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*base_cmd(), *args],
        env={**env, **extra},
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
        input=input_text,
    )
    if code is not None:
        assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return result


def gh_json(env: dict[str, str], *args: str, code: int = 0) -> Any:
    return json.loads(gh(env, *args, "--json", code=code).stdout)


def crashed_thread(env: dict[str, str]) -> str:
    """A thread paused on an outcome-unknown request, left by a real crash."""
    thread_id = gh_json(env, "send", "run the command", code=3)["thread_id"]
    request = gh_json(env, "pending")[0]["interrupt_id"]
    died = gh(
        env, "approve", thread_id, "--interrupt-id", request, GATEHOUSE_CRASH_AT="before_tool"
    )
    assert died.returncode in (-9, 137), (died.returncode, died.stdout, died.stderr)
    resumed = gh_json(env, "resume", thread_id, code=3)
    assert resumed["status"] == "awaiting_approval"
    assert resumed["pending"]["kind"] == "outcome_unknown"
    assert resumed["pending"]["outcome_unknown"]["name"] == "run_command"
    assert not hits(env).exists()
    return thread_id


def hits(env: dict[str, str]) -> Path:
    return Path(env["GATEHOUSE_WORKSPACE"]) / "hits.txt"


# -- the web app ------------------------------------------------------------------
def texts(at: AppTest) -> str:
    parts = (
        [m.value for m in at.markdown] + [e.value for e in at.info] + [e.value for e in at.warning]
    )
    parts += (
        [e.value for e in at.error] + [c.value for c in at.code] + [c.value for c in at.caption]
    )
    return "\n".join(str(p) for p in parts)


def key_ending(at: AppTest, suffix: str) -> str:
    return next(w.key for w in [*at.button, *at.radio] if w.key and w.key.endswith(suffix))


def test_web_outcome_card_mark_failed(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    thread_id = crashed_thread(env)
    for name in [k for k in os.environ if k.startswith(("OPENAI_", "GATEHOUSE_"))]:
        monkeypatch.delenv(name)
    for name in (
        "GATEHOUSE_DB",
        "GATEHOUSE_WORKSPACE",
        "GATEHOUSE_CONFIG",
        "GATEHOUSE_MODEL_FACTORY",
    ):
        monkeypatch.setenv(name, env[name])

    # The inbox lists the thread with the outcome card (no crash on a request without calls).
    inbox = app_page(TIMEOUT)
    inbox.query_params["view"] = "inbox"
    inbox.run()
    assert not inbox.exception
    body = texts(inbox)
    assert "1 thread waiting" in body and "outcome unknown" in body and "Outcome unknown" in body

    at = app_page(TIMEOUT)
    at.query_params["thread"] = thread_id
    at.run()
    assert not at.exception
    body = texts(at)
    assert "Outcome unknown" in body and "run_command" in body
    assert "echo hit >> hits.txt" in body  # the arguments, as JSON
    assert "started at" in body and "may or may not have done its work" in body
    assert at.chat_input(key="prompt").disabled

    choice = key_ending(at, "-outcome-choice")
    key = choice.removesuffix("-choice")
    assert at.radio(key=choice).options == [
        "Run again",
        "Mark as failed",
        "Respond with the real outcome",
    ]
    # Nothing pre-selected (issue 19 #10): least of all the risky "Run again".
    assert at.radio(key=choice).value is None
    assert at.button(key=f"{key}-submit").disabled
    at.radio(key=choice).set_value("run_again").run()
    assert any("repeat its side effect" in w.value for w in at.warning)

    # "Respond" needs the real outcome: an empty one is refused, nothing changes.
    at.radio(key=choice).set_value("respond").run()
    at.button(key=f"{key}-submit").click().run()
    assert any("what really happened" in e.value for e in at.error)
    assert "Outcome unknown" in texts(at)

    at.radio(key=choice).set_value("mark_failed").run()
    at.text_input(key=f"{key}-note").input("the power went out").run()
    at.button(key=f"{key}-submit").click().run()
    assert not at.exception

    shown = gh_json(env, "show", thread_id)
    assert shown["thread"]["status"] == "completed"
    assert shown["pending"] is None
    [tool] = [m for m in shown["messages"] if m["role"] == "tool"]
    assert "marked it as failed" in tool["content"] and "the power went out" in tool["content"]
    assert not hits(env).exists()  # the tool never ran, and was not run again


# -- the terminal client ----------------------------------------------------------------
def test_cli_pending_approve_refused_and_resolve_outcome(env: dict[str, str]) -> None:
    thread_id = crashed_thread(env)

    [item] = gh_json(env, "pending")
    assert (
        item["thread_id"] == thread_id and item["kind"] == "outcome_unknown" and item["calls"] == []
    )
    assert item["outcome_unknown"]["args"] == {"command": "echo hit >> hits.txt"}
    listed = gh(env, "pending", code=0).stdout
    assert "outcome unknown" in listed and "run_command" in listed
    assert "outcome unknown" in gh(env, "show", thread_id, code=0).stdout

    # approve/reject refuse (exit 2) and point at resolve; resolve refuses bad option sets.
    refused = gh(env, "approve", thread_id, code=2)
    assert "gatehouse resolve" in refused.stderr
    assert "gatehouse resolve" in gh(env, "reject", thread_id, "-m", "no", code=2).stderr
    gh(env, "resolve", thread_id, code=2)
    gh(env, "resolve", thread_id, "--run-again", "--outcome", "x", code=2)
    gh(env, "resolve", thread_id, "--outcome", "  ", code=2)
    gh(env, "resolve", thread_id, "--outcome", "x", "--interrupt-id", "not-the-pending-one", code=2)
    assert (
        "--interrupt-id" in gh(env, "resolve", thread_id, "--outcome", "x", code=2).stderr
    )  # unnamed
    assert gh_json(env, "pending")[0]["interrupt_id"] == item["interrupt_id"]

    done = gh_json(
        env, "resolve", thread_id, "--outcome", "it worked", "--interrupt-id", item["interrupt_id"]
    )
    assert done["status"] == "completed" and done["pending"] is None
    shown = gh_json(env, "show", thread_id)
    assert [m["content"] for m in shown["messages"] if m["role"] == "tool"] == ["it worked"]
    assert not hits(env).exists()

    # Nothing is pending any more.
    assert (
        "not waiting for a decision" in gh(env, "resolve", thread_id, "--run-again", code=2).stderr
    )
    assert gh_json(env, "pending") == []


def test_chat_prompt_run_again_after_confirming(env: dict[str, str]) -> None:
    thread_id = crashed_thread(env)
    # Piped stdin: a bad key, "run again" declined, then confirmed; the tool runs once.
    chat = gh(env, "chat", "--thread", thread_id, code=0, input_text="x\na\nn\na\ny\n/exit\n")
    assert "[a] run again  [f] mark failed  [s] respond" in chat.stdout
    assert "may repeat its side effect" in chat.stdout
    assert hits(env).read_text() == "hit\n"
    assert gh_json(env, "show", thread_id)["thread"]["status"] == "completed"
