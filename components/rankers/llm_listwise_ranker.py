"""LLMListwiseRanker: one LLM call reads the question and the numbered candidates and names the decisive ones.

The pointwise reranker (`LLMRelevanceRanker`) asks one yes/no question per passage and reads P(是) from the
logprobs; on the embedded 1.5B model on 2 cores that is a call per article and a server that keeps every prompt
token's logits. Here the question and the top ``top_n`` candidates (each its 《法名》第X条 label and its first
sentences, `passage`) form one prompt, and the model answers with the numbers of the articles that answer the
question, most decisive first. The named articles move to the front in that order; the rest keep the first-stage
order behind them. A reply that names no valid number (junk, a refusal, a failed call) leaves the first-stage order
as it was, so a bad reply never loses evidence. No logprobs are needed.

Usage::

    from components.rankers.llm_listwise_ranker import LLMListwiseRanker
    ranker = LLMListwiseRanker(top_n=20, top_k=10)   # LLM from llm_access.factory unless a chat_generator is given
    ranker.warm_up()
    out = ranker.run(query="公司收集个人信息需要同意吗", documents=fused_docs)
    out["documents"], out["rerank"]     # reordered; {"scored", "llm_calls", "chosen", "parsed", "seconds"}
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from haystack import Document, component, logging
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage

from helpers.checks.prompt_guard import quote_data
from helpers.statutes.passages import passage
from llm_access.call_policy import LLMComponent

logger = logging.getLogger(__name__)

SYSTEM = ("你是法律检索助手。给你一个用户的问题和若干编号的法条，找出能直接回答这个问题的法条。"
          "只输出法条编号，用逗号分隔，最相关的在前，不要解释。")
USER = ("问题：{query}\n\n法条：\n<<<\n{candidates}\n>>>\n\n"
        "哪些法条能回答上面的问题？按相关程度从高到低写出最多{most}个编号，用逗号分隔，只写编号。")
NUMBER = re.compile(r"\d+")


def chosen_numbers(text: str | None, count: int) -> list[int]:
    """The candidate numbers (1-based, within ``count``) a reply names, in its order, each once; [] for junk."""
    seen: dict[int, None] = {}
    for match in NUMBER.findall(text or ""):
        number = int(match)
        if 1 <= number <= count:
            seen.setdefault(number, None)
    return list(seen)


@component
class LLMListwiseRanker(LLMComponent):
    """Reorders the first ``top_n`` documents by one listwise LLM call; the rest keep their order behind them.

    :param chat_generator: the LLM; ``None`` = the project's LLM factory (`llm_access.factory`) at warm-up. The call
        goes through the project's one LLM call policy (`llm_access.call_policy`).
    :param top_n: how many of the incoming documents the prompt lists.
    :param max_chars: characters of each passage (its first sentences, cut at a sentence end where one falls).
    :param most: how many numbers the model is asked for.
    :param top_k: documents returned (``None``: all).
    :param max_tokens: the reply's token limit.
    :param role: which of the factory's LLMs reads (``main``, or ``light``: `LLM_LIGHT_MODEL`).
    """

    _params = ("top_n", "max_chars", "most", "top_k", "max_tokens")

    def __init__(self, chat_generator: OpenAIChatGenerator | None = None, top_n: int = 20, max_chars: int = 80,
                 most: int = 5, top_k: int | None = None, max_tokens: int = 32, role: str = "main") -> None:
        for name, value in (("top_n", top_n), ("max_chars", max_chars), ("most", most), ("max_tokens", max_tokens)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        LLMComponent.__init__(self, chat_generator, role=role)  # @component re-creates the class: no super()
        self.top_n = top_n
        self.max_chars = max_chars
        self.most = most
        self.top_k = top_k
        self.max_tokens = max_tokens

    def messages(self, query: str, documents: list[Document]) -> list[ChatMessage]:
        """The one prompt: the question, then the numbered candidates (label and first sentences)."""
        candidates = "\n".join(f"[{i}] {quote_data(passage(doc, self.max_chars))}"
                               for i, doc in enumerate(documents, start=1))
        return [ChatMessage.from_system(SYSTEM),
                ChatMessage.from_user(USER.format(query=quote_data(query), candidates=candidates,
                                                  most=min(self.most, len(documents))))]

    @component.output_types(documents=list[Document], rerank=dict)
    def run(self, query: str, documents: list[Document], top_n: int | None = None,
            top_k: int | None = None) -> dict[str, Any]:
        """Read the head of ``documents`` in one call and move the articles the reply names to the front.

        :returns: ``documents`` (``top_k`` of them; each read one carries ``meta["llm_choice"]``, its place in the
            reply, 0 when not named) and ``rerank``: candidates listed, LLM calls, articles named, whether the
            reply parsed, the call's seconds and its error if any.
        """
        top_k = top_k or self.top_k
        head, tail = documents[: top_n or self.top_n], documents[top_n or self.top_n :]
        if len(head) < 2:  # nothing to reorder: no call
            return {"documents": documents[:top_k] if top_k else documents,
                    "rerank": {"scored": len(head), "llm_calls": 0, "chosen": 0, "parsed": False, "seconds": 0.0}}
        call = self.chat(self.messages(query, head), {"max_tokens": self.max_tokens, "temperature": 0})
        numbers = chosen_numbers(call.text, len(head))
        if call.error or not numbers:
            logger.warning("Listwise rerank kept the first-stage order: {why}",
                           why=call.error or f"no candidate number in the reply {str(call.text)[:80]!r}")
        place = {number - 1: rank for rank, number in enumerate(numbers, start=1)}
        order = [i - 1 for i in numbers] + [i for i in range(len(head)) if i not in place]
        ranked = [replace(head[i], meta={**head[i].meta, "llm_choice": place.get(i, 0)}) for i in order] + tail
        rerank = {"scored": len(head), "llm_calls": 1, "chosen": len(numbers), "parsed": bool(numbers),
                  "seconds": round(call.seconds, 3), **({"error": call.error} if call.error else {})}
        return {"documents": ranked[:top_k] if top_k else ranked, "rerank": rerank}
