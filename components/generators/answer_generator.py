"""AnswerGenerator: runs the answer prompt through the LLM (streaming optional); a failure never escapes.

A streamed answer goes through the answer check on its way out (`helpers.checks.checked_stream.CheckedStream`): the
【相关法条】 section streams as the store's text of the articles the model names, with the same flags the final
answer gets from `AnswerFinalizer` (which checks the returned text the same way).

Usage::

    generator = AnswerGenerator()
    out = generator.run(messages=prompt_messages, situation="sufficient", evidence=docs, query=query)
    out["text"], out["error"], out["removed"]
"""

from collections.abc import Callable
from typing import Any

from haystack import Document, component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage, ChatRole, StreamingChunk

from helpers.checks.answer_check import AnswerChecker
from helpers.checks.checked_stream import CheckedStream
from llm_access.call_policy import LLMComponent

VERBATIM = ("说明：", "【免责声明】")  # prompt lines that are not instructions: the notes, and the disclaimer to copy


def instruction_lines(messages: list[ChatMessage]) -> list[str]:
    """The prompt's instructions (the lines after the ``>>>`` evidence block, not the ``说明：`` notes nor the
    disclaimer the answer is meant to repeat): small models sometimes copy them into the answer, so the LLM call
    drops the sentences that copy them (`LLMComponent.chat` ``no_echo``)."""
    user = next((m.text or "" for m in reversed(messages) if m.is_from(ChatRole.USER)), "")
    tail = user.rsplit(">>>", 1)[-1] if ">>>" in user else ""
    return [line for line in tail.splitlines() if line.strip() and not line.startswith(VERBATIM)]


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

    @component.output_types(text=str, error=str, llm_calls=int, seconds=float, removed=int, cut_off=bool)
    def run(
        self,
        messages: list[ChatMessage],
        situation: str,
        evidence: list[Document] | None = None,
        query: str = "",
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
        preface: str = "",
    ) -> dict[str, Any]:
        """:param evidence: and ``query``: what the streamed answer is checked against (see the module docstring).
        :returns: ``text`` as the model wrote it (after the LLM call's guards), ``removed``: the sentences those
            guards removed, ``cut_off``: the reply stopped at ``max_tokens``.
        :param preface: a line the answer starts with (`EvidenceSelector`), streamed before the model's text; the
            returned ``text`` does not hold it (`AnswerFinalizer` puts it first)."""
        if situation == "none":
            return {"text": "", "error": "", "llm_calls": 0, "seconds": 0.0, "removed": 0, "cut_off": False}
        if streaming_callback is not None and preface:
            streaming_callback(StreamingChunk(content=preface))
        stream = None if streaming_callback is None else CheckedStream(AnswerChecker(evidence or [], query),
                                                                        streaming_callback)
        call = self.chat(messages, {"temperature": 0.2, "max_tokens": self.max_tokens}, stream,
                         no_echo=instruction_lines(messages))
        cut_off = bool(call.reply and call.reply.meta.get("finish_reason") == "length")
        if stream is not None and not call.error:
            stream.flush(cut_off)
        return {"text": call.text or "", "error": call.error or "", "llm_calls": 1, "seconds": round(call.seconds, 3),
                "removed": call.removed, "cut_off": cut_off}
