"""Every event type survives JSON and back unchanged (the embedding contract)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gatehouse.graph.protocol import events as ev

# One fully populated example per type; optional fields set to non-defaults so a
# field dropped or renamed in serialisation would show.
EXAMPLES: dict[type[Any], dict[str, Any]] = {
    ev.RunStarted: {"run_id": "r1", "kind": "resume"},
    ev.TextDelta: {"text": "héllo ✓\n", "message_id": "m1"},
    ev.ReasoningDelta: {"text": "the user wants ✓\n", "message_id": "m1"},
    ev.ModelRetried: {
        "attempt": 2,
        "max_retries": 3,
        "delay_s": 1.5,
        "reason": "HTTP 429",
        "message_id": "m1",
    },
    ev.ReplyRejected: {"message_id": "m1", "reason": "not valid JSON"},
    ev.PartStarted: {
        "message_id": "m1",
        "index": 2,
        "part_kind": "tool_call",
        "call_id": "c1",
        "tool_name": "write_file",
    },
    ev.MessageReplaced: {"message_id": "m1", "text": "The key is [redacted] ✓", "removed": True},
    ev.AssistantMessage: {
        "message_id": "m1",
        "text": "Done: todo.md has 3 items.",
        "tool_calls": ["write_file"],
    },
    ev.TurnComplete: {"status": "stopped", "history_size": 7},
    ev.ToolStarted: {
        "call_id": "c1",
        "name": "write_file",
        "args": {"path": "a.md", "n": [1, 2.5, None, {"x": True}]},
        "auto_approved": True,
    },
    ev.ToolOutput: {"call_id": "c1", "text": "line 1\n"},
    ev.ToolFinished: {
        "call_id": "c1",
        "name": "run_command",
        "status": "ok",
        "output": "line 1\n… [output stored aside …]",
        "duration_ms": 12.5,
        "offloaded": True,
        "total_chars": 48210,
    },
    ev.ApprovalRequired: {
        "interrupt_id": "i1",
        "request": {
            "action_requests": [
                {
                    "name": "write_file",
                    "args": {"path": "a.md", "content": "x\n"},
                    "description": "d",
                    "tool_call_id": "c1",
                }
            ],
            "review_configs": [
                {"action_name": "write_file", "allowed_decisions": ["approve", "reject"]}
            ],
        },
    },
    ev.Usage: {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "cost": 0.0012},
    ev.Compacted: {"tokens_before": 9000, "tokens_after": 1200, "messages_removed": 40},
    ev.Notice: {"text": "budget at 80%", "source": "budget"},
    ev.RunFinished: {
        "status": "completed",
        "reason": "why",
        "text": "Done: todo.md has 3 items.",
        "message_id": "m1",
    },
    ev.ErrorEvent: {"message": "The model API failed", "kind": "model", "retryable": True},
    ev.Done: {"operation": "undo", "removed": 2},
}


def test_every_event_type_has_an_example() -> None:
    assert set(EXAMPLES) == set(ev.EVENT_TYPES)


@pytest.mark.parametrize("cls", ev.EVENT_TYPES, ids=lambda c: c.__name__)
def test_round_trip(cls: type[Any]) -> None:
    event = cls(thread_id="t1", ts=1795323976.8141537, **EXAMPLES[cls])
    text = event.to_json()
    assert json.loads(text)["type"] == event.type
    for data in (text, text.encode(), event.to_dict(), json.loads(text)):
        back = ev.parse_event(data)
        assert type(back) is cls
        assert back == event
        assert back.to_json() == text


@pytest.mark.parametrize("cls", ev.EVENT_TYPES, ids=lambda c: c.__name__)
def test_round_trip_with_defaults(cls: type[Any]) -> None:
    required = {k: v for k, v in EXAMPLES[cls].items() if cls.model_fields[k].is_required()}
    event = cls(thread_id="t1", **required)
    assert ev.parse_event(event.to_json()) == event


def test_schema_names_every_type() -> None:
    schema = ev.event_json_schema()
    text = json.dumps(schema)
    for cls in ev.EVENT_TYPES:
        assert cls.__name__ in schema["$defs"]
        assert f'"{cls.model_fields["type"].default}"' in text


def test_unknown_type_is_refused() -> None:
    with pytest.raises(ValueError):
        ev.parse_event({"type": "nope", "thread_id": "t"})


# -- the schema section of docs/embedding.md is generated from the models --------

DOC = Path(__file__).resolve().parent.parent / "docs" / "embedding.md"
START = "<!-- schema:start (generated from gatehouse.graph.protocol.events; regenerate: uv run python tests/test_events_roundtrip.py) -->"
END = "<!-- schema:end -->"


def _type_of(prop: dict[str, Any]) -> str:
    if "const" in prop:
        return f'`"{prop["const"]}"`'
    if "enum" in prop:
        return " \\| ".join(f'`"{v}"`' for v in prop["enum"])
    if "anyOf" in prop:
        return " \\| ".join(_type_of(p) for p in prop["anyOf"])
    return str(prop.get("type", "any"))


def schema_section() -> str:
    defs = ev.event_json_schema()["$defs"]
    out = [START, ""]
    for cls in ev.EVENT_TYPES:
        schema = defs[cls.__name__]
        out.append(f"### `{cls.model_fields['type'].default}` — {cls.__name__}")
        out.append("")
        if schema.get("description"):
            out += [schema["description"], ""]
        out += ["| field | type | default |", "|---|---|---|"]
        names = ["type", *(n for n in cls.model_fields if n != "type")]
        for name in names:
            field = cls.model_fields[name]
            if field.is_required():
                default = "required"
            elif name == "ts":
                default = "now"
            else:
                default = f"`{json.dumps(field.get_default(call_default_factory=True))}`"
            out.append(f"| `{name}` | {_type_of(schema['properties'][name])} | {default} |")
        example = cls(thread_id="3f2a…", ts=1795323976.8141537, **EXAMPLES[cls])
        out += ["", "```json", example.to_json(), "```", ""]
    out.append(END)
    return "\n".join(out)


def _doc_parts() -> tuple[str, str, str]:
    text = DOC.read_text()
    head, rest = text.split(START, 1)
    body, tail = rest.split(END, 1)
    return head, START + body + END, tail


def test_docs_schema_section_is_current() -> None:
    assert _doc_parts()[1] == schema_section(), (
        "docs/embedding.md is out of date: run `uv run python tests/test_events_roundtrip.py`"
    )


if __name__ == "__main__":
    head, _, tail = _doc_parts()
    DOC.write_text(head + schema_section() + tail)
    print(f"updated {DOC}")
