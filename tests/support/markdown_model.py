"""A demo model for the display tests: it answers a message that starts with
"markdown please" with the text in GATEHOUSE_TEST_REPLY (images, links, raw HTML an
attacker would write), and anything else like the offline demo model.
Selected with GATEHOUSE_MODEL_FACTORY=tests.support.markdown_model:make_model."""

from __future__ import annotations

import os

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from gatehouse.graph.service.demo_model import DemoModel, text_of

TRIGGER = "markdown please"


class MarkdownModel(DemoModel):
    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        if isinstance(last, HumanMessage) and text_of(last.content).strip().startswith(TRIGGER):
            return AIMessage(content=os.environ.get("GATEHOUSE_TEST_REPLY", "(no reply set)"))
        return super().reply(messages)


def make_model() -> MarkdownModel:
    return MarkdownModel()
