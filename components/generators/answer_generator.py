"""AnswerGenerator: runs the answer prompt through the LLM (streaming optional); a failure never escapes.

Usage::

    generator = AnswerGenerator()
    out = generator.run(messages=prompt_messages, situation="sufficient")
    out["text"], out["error"]
"""

from collections.abc import Callable
from typing import Any

from haystack import component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage, ChatRole, StreamingChunk

from llm_access.call_policy import LLMComponent


def instruction_lines(messages: list[ChatMessage]) -> list[str]:
    """The prompt's instructions (the lines after the ``>>>`` evidence block, not the ``说明：`` notes): small models
    sometimes copy them into the answer, so the LLM call drops copied runs of them (`LLMComponent.chat` ``no_echo``)."""
    user = next((m.text or "" for m in reversed(messages) if m.is_from(ChatRole.USER)), "")
    tail = user.rsplit(">>>", 1)[-1] if ">>>" in user else ""
    return [line for line in tail.splitlines() if line.strip() and not line.startswith("说明：")]


@component
class AnswerGenerator(LLMComponent):
    """Generates the answer text; skips the LLM when the situation is ``none`` (nothing to answer from).

    :param chat_generator: the LLM; ``None`` = the factory's main model at warm-up.
    :param max_tokens: answer length cap.
    """

    _params = ("max_tokens",)

    def __init__(self, chat_generator: OpenAIChatGenerator | None = None, role: str = "main",
                 max_tokens: int = 900) -> None:
        LLMComponent.__init__(self, chat_generator, role)
        self.max_tokens = max_tokens

    @component.output_types(text=str, error=str, llm_calls=int, seconds=float)
    def run(
        self,
        messages: list[ChatMessage],
        situation: str,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> dict[str, Any]:
        if situation == "none":
            return {"text": "", "error": "", "llm_calls": 0, "seconds": 0.0}
        call = self.chat(messages, {"temperature": 0.2, "max_tokens": self.max_tokens}, streaming_callback,
                         no_echo=instruction_lines(messages))
        return {"text": call.text or "", "error": call.error or "", "llm_calls": 1, "seconds": round(call.seconds, 3)}
