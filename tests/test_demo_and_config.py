"""The offline demo model and settings: what a new user meets first."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatehouse.graph.service.app import open_session
from gatehouse.graph.service.config import ConfigError, Settings, load_settings
from gatehouse.graph.service.models import make_model


def test_demo_model_runs_the_whole_approval_flow(tmp_path: Path) -> None:
    session = open_session(Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws")))
    assert session.info["demo"] is True and "Demo" in session.info["model"]
    run = session.send(None, "list files then write todo.md: buy milk")
    events = run.collect()
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert "Demo model" in text, "the demo says it is a demo"
    request = next(e for e in events if e.type == "approval_required").request
    action = request["action_requests"][0]
    assert action["name"] == "write_file" and action["risk"] == "write"
    assert "buy milk" in action["preview"]
    assert not (tmp_path / "ws" / "todo.md").exists()
    done = session.resume(run.thread_id, {"decisions": [{"type": "approve"}]}).collect()
    assert done[-1].status == "completed"
    assert (tmp_path / "ws" / "todo.md").read_text() == "buy milk\n"
    session.close()


def test_demo_model_explains_itself_for_unknown_requests(tmp_path: Path) -> None:
    session = open_session(Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws")))
    events = session.send(None, "what's the weather?").collect()
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert "OPENAI_API_KEY" in text and "list files" in text
    session.close()


def test_model_choice_follows_the_environment() -> None:
    assert type(make_model(load_settings(env={}))).__name__ == "DemoModel"
    model = make_model(
        load_settings(env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "GATEHOUSE_MODEL": "llama3"})
    )
    from langchain_openai import ChatOpenAI

    assert isinstance(model, ChatOpenAI) and model.model_name == "llama3"


def test_config_file_sets_policy_and_paths(tmp_path: Path) -> None:
    cfg = tmp_path / "gatehouse.toml"
    cfg.write_text(
        'db = "data/threads.db"\nworkspace = "files"\n[model]\nname = "gpt-x"\ntemperature = 0.5\n'
        '[policy.write_file]\nmode = "deny"\n'
    )
    settings = load_settings(cfg, env={})
    assert settings.db == str(tmp_path / "data/threads.db")
    assert settings.workspace == str(tmp_path / "files")
    assert settings.model == "gpt-x" and settings.temperature == 0.5
    assert settings.policy == {"write_file": {"mode": "deny"}}


@pytest.mark.parametrize(
    "text, phrase",
    [
        ("db = [", "cannot read config"),
        ("colour = 'blue'", "unknown settings"),
        ("max_model_calls = 'many'", "max_model_calls must be a whole number, not 'many'"),
        # The setting is named, not only the value ("could not convert string to float").
        ("[model]\ntemperature = 'hot'", r"\[model\] temperature must be a number, not 'hot'"),
        ("[tools]\nshell_memory_mb = '4G'", r"\[tools\] shell_memory_mb must be a whole number"),
        ("[compaction]\nkeep_turns = 'all'", r"\[compaction\] keep_turns must be a whole number"),
        # Not quietly converted: int(2.7) is 2, int(True) is 1.
        ("max_model_calls = 2.7", "max_model_calls must be a whole number, not 2.7"),
        ("max_parallel_tools = true", "max_parallel_tools must be a whole number, not True"),
        ("[model]\ntemperature = nan", r"\[model\] temperature must be a number, not nan"),
        ("[model]\ntimeout = inf", r"\[model\] timeout must be a number, not inf"),
    ],
)
def test_bad_config_gives_a_clear_error(tmp_path: Path, text: str, phrase: str) -> None:
    cfg = tmp_path / "gatehouse.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=phrase):
        load_settings(cfg, env={})
