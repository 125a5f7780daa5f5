"""The model-server cases of tests/test_model_servers.py through the terminal client:
real `gatehouse` subprocesses whose `OPENAI_BASE_URL` points at the local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import FakeOpenAI, closed_port_url

# Each command is a fresh process that imports the agent: seconds, not milliseconds.
pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "gatehouse"
THOUGHT = "The user wants a greeting.\nKeep it short."


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    e.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        GATEHOUSE_MODEL="gpt-test",
        OPENAI_API_KEY="test",
        GATEHOUSE_MODEL_MAX_RETRIES="0",
    )
    e.pop("NO_COLOR", None)
    (tmp_path / "ws").mkdir()
    return e


def gh(env: dict[str, str], *args: str, code: int) -> subprocess.CompletedProcess[str]:
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]
    result = subprocess.run(
        [*cmd, *args], env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return result


def gh_json(env: dict[str, str], *args: str, code: int) -> Any:
    return json.loads(gh(env, *args, "--json", code=code).stdout)


def at(env: dict[str, str], server_url: str, **more: str) -> dict[str, str]:
    return {**env, "OPENAI_BASE_URL": server_url, **more}


def test_a_server_that_does_not_stream_answers_through_the_terminal(env: dict[str, str]) -> None:
    with FakeOpenAI([{"content": "Hello from behind a proxy.", "stream": False}]) as server:
        result = gh(at(env, server.base_url), "send", "hi", "--json", code=0)
    sent = json.loads(result.stdout)
    assert sent["status"] == "completed" and sent["text"] == "Hello from behind a proxy."
    assert "without streaming" in result.stderr  # the one log line


def test_a_cut_off_reply_is_shown_stopped_explained_and_resumable(env: dict[str, str]) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:
            return {"content": "I wrote the file and everything is ready for you now.", "cut": True}
        return "Here is the whole answer."

    with FakeOpenAI([reply] * 5) as server:
        e = at(env, server.base_url)
        sent = gh_json(e, "send", "write it", code=1)
        thread_id = sent["thread_id"]
        assert sent["status"] == "stopped" and "cut off" in sent["reason"]
        assert sent["notices"][0]["source"] == "cut_off"
        assert sent["text"].startswith("I wrote the ") and not sent["text"].endswith("now.")

        shown = gh(e, "show", thread_id, code=0).stdout
        assert "stopped" in shown and sent["reason"] in shown
        assert "⚠ cut off" in shown
        assert gh_json(e, "show", thread_id, code=0)["thread"]["reason"] == sent["reason"]

        resumed = gh_json(e, "resume", thread_id, code=0)
    assert resumed["status"] == "completed" and resumed["text"] == "Here is the whole answer."


def test_reasoning_is_apart_from_the_answer_in_json_and_labelled_in_text(
    env: dict[str, str],
) -> None:
    script = [
        {"content": f"<think>{THOUGHT}</think>\n\nHello!", "chunk_chars": 3},
        {"reasoning": "A second thought.", "content": "Hello again."},
    ]
    with FakeOpenAI(script) as server:
        e = at(env, server.base_url)
        sent = gh_json(e, "send", "greet me", code=0)
        assert (sent["reasoning"], sent["text"]) == (THOUGHT, "Hello!")
        plain = gh(e, "send", "--thread", sent["thread_id"], "again", code=0).stdout
        shown = gh(e, "show", sent["thread_id"], code=0).stdout

    assert "thinking ▸ A second thought.\nHello again." in plain
    assert "<think>" not in shown and "thinking ▸ The user wants a greeting." in shown
    assert "agent ▸ Hello!" in shown


@pytest.mark.parametrize("case", ["401", "refused"])
def test_a_model_api_failure_is_named_and_show_says_why(env: dict[str, str], case: str) -> None:
    with FakeOpenAI([{"status": 401, "content": "Invalid API key"}]) as server:
        e = at(env, server.base_url if case == "401" else closed_port_url())
        sent = gh_json(e, "send", "hi", code=1)
        thread_id = sent["thread_id"]
        shown = gh(e, "show", thread_id, code=0).stdout
        listed = gh_json(e, "threads", code=0)

    failure = sent["failure"]
    assert failure["kind"] == "model" and failure["retryable"]
    if case == "401":
        assert "HTTP 401: Invalid API key" in failure["message"]
    else:
        assert (
            "Could not reach the model server" in failure["message"]
            and "refused" in failure["message"].lower()
        )
    assert f"last run failed: {failure['message']}" in shown
    assert [(t["status"], t["reason"]) for t in listed] == [("failed", failure["message"])]


def test_retries_and_timeouts_come_from_gatehouse_toml(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "gatehouse.toml"
    config.write_text("[model]\nmax_retries = 1\ntimeout = 0.5\n")
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:
            return {"content": "Too late.", "delay": 3}  # silent past the timeout: retried
        return "In time."

    e = {k: v for k, v in env.items() if k != "GATEHOUSE_MODEL_MAX_RETRIES"}
    with FakeOpenAI([reply]) as server:
        sent = gh_json(at(e, server.base_url, GATEHOUSE_CONFIG=str(config)), "send", "hi", code=0)

    (retry,) = sent["retries"]
    assert (retry["attempt"], retry["max_retries"]) == (1, 1)
    assert "did not answer in time" in retry["reason"]
    assert sent["status"] == "completed" and sent["text"] == "In time."


def test_each_retry_is_one_line_in_the_terminal(env: dict[str, str]) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        return {"status": 503, "content": "warming up"} if len(calls) == 1 else "Ready."

    with FakeOpenAI([reply]) as server:
        result = gh(at(env, server.base_url, GATEHOUSE_MODEL_MAX_RETRIES="1"), "send", "hi", code=0)
    both = result.stdout + result.stderr
    # The event's line, not also a log line saying the same.
    assert both.count("HTTP 503: warming up") == 1, both
    assert "retry 1 of 1" in result.stdout and "Ready." in result.stdout


def test_a_cut_call_is_not_shown_as_a_call(env: dict[str, str]) -> None:
    call = {
        "id": "call_w1",
        "name": "write_file",
        "arguments": {"path": "notes.md", "content": "buy milk\n"},
    }
    with FakeOpenAI([{"tool_calls": [call], "cut": 3}]) as server:
        result = gh(at(env, server.base_url), "send", "write my notes", code=1)
    assert "write_file" not in result.stdout  # no `⚙ write_file {}` for a call that never ran
    assert "cut off" in result.stdout and "tool call was not run" in result.stdout


def test_an_empty_reply_is_a_failure_not_an_empty_success(env: dict[str, str]) -> None:
    with FakeOpenAI([{"content": ""}]) as server:
        sent = gh_json(at(env, server.base_url), "send", "hi", code=1)
    assert sent["status"] == "failed" and sent["failure"]["kind"] == "model"
    assert "empty reply" in sent["failure"]["message"]
