"""Answer judge: a second model grades the final answer; below a threshold, the agent
gets the critique and tries again (at most `max_rounds` times).

    judge = AnswerJudge(ChatOpenAI(model="gpt-4o-mini"), threshold=7, max_rounds=2)
    build_graph(..., hooks={"on_exit": [judge]})

An unreadable grade lets the answer stand, so a flaky judge never loops."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from gatehouse.graph.agent.builtin_hooks.require_tool import HOOK_MARK, from_person
from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.history import text_of
from gatehouse.graph.protocol import events as ev

JUDGE_INSTRUCTIONS = (
    "You grade an assistant's final answer to a user's request. Judge correctness, "
    "completeness and whether it actually answers the request. Reply exactly as:\n"
    "GRADE: <number from 0 to {scale}>\nCRITIQUE: <what is wrong or missing, concretely>"
)

_GRADE = re.compile(r"grade\s*[:=]?\s*(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?", re.IGNORECASE)
_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?")
_CRITIQUE = re.compile(r"critique\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)


def parse_grade(text: str, scale: float = 10) -> tuple[float | None, str]:
    """(grade on `scale` or None, critique). "7/10", "GRADE: 3.5", "8 / 20" all work."""
    match = _GRADE.search(text) or _NUMBER.search(text)
    grade: float | None = None
    if match:
        grade = float(match.group(1))
        if match.group(2) and float(match.group(2)) > 0:
            grade = grade / float(match.group(2)) * scale
        grade = min(max(grade, 0.0), float(scale))
    critique = _CRITIQUE.search(text)
    return grade, (critique.group(1) if critique else text).strip()


@dataclass(repr=False, eq=False)
class AnswerJudge:
    model: BaseChatModel
    _: KW_ONLY
    threshold: float = 7
    max_rounds: int = 2
    scale: float = 10
    instructions: str = JUDGE_INSTRUCTIONS
    name: str = "judge"
    copy_state = False  # it returns its changes: a read-only view (hook_state.py)

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= self.scale:
            raise ValueError(f"threshold must be between 0 and {self.scale}")

    def __repr__(self) -> str:
        return f"AnswerJudge({self.name})"

    def run(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        if state.get("continue_run") or state.get("stop_reason"):
            return None  # an earlier on_exit hook already decided this exit
        messages = list(state.get("messages") or [])
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if answer is None or answer.tool_calls or not _text(answer).strip():
            return None
        mine = dict((state.get("hook_run") or {}).get(self.name) or {})
        rounds = mine.get("rounds", 0)
        request = next((_text(m) for m in reversed(messages) if from_person(m)), "(unknown)")
        reply = self.model.invoke(
            [
                SystemMessage(self.instructions.format(scale=f"{self.scale:g}")),
                HumanMessage(f"Request:\n{request}\n\nFinal answer:\n{_text(answer)}"),
            ]
        )
        grade, critique = parse_grade(_text(reply), self.scale)
        mine["grade"] = grade
        if grade is None:
            text = "The answer judge gave no readable grade; keeping the answer."
        else:
            text = f"Answer judge: {grade:g}/{self.scale:g} (needs {self.threshold:g})"
            if grade < self.threshold and rounds >= self.max_rounds:
                text += f"; keeping it after {rounds} revision(s)"
        emit(ev.Notice, text=text, source=self.name)
        if grade is None or grade >= self.threshold or rounds >= self.max_rounds:
            return {"hook_run": {self.name: mine}}
        mine["rounds"] = rounds + 1
        feedback = (
            f"A reviewer graded your answer {grade:g}/{self.scale:g} (it needs {self.threshold:g}). "
            f"Critique:\n{critique}\n\nWrite an improved final answer."
        )
        return {
            "continue_run": True,
            "messages": [HumanMessage(feedback, additional_kwargs={HOOK_MARK: self.name})],
            "hook_run": {self.name: mine},
        }


def _text(message: Any) -> str:
    return text_of(message.content)
