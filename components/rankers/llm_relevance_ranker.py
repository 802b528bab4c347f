"""LLMRelevanceRanker: reranks the top passages by the LLM's probability that a passage helps answer the query.

For each of the top ``top_n`` documents the LLM is asked one short yes/no question and answers with a single
token; the score is P(是) / (P(是) + P(否)) from the returned ``logprobs`` (or 1/0 from the text when a server
returns none). Works with the embedded llama.cpp server and DeepSeek alike (both return logprobs).

Usage::

    from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
    ranker = LLMRelevanceRanker(top_n=10)      # LLM from llm_access.factory unless a chat_generator is given
    ranker.warm_up()
    docs = ranker.run(query="公司收集个人信息需要同意吗", documents=fused_docs)["documents"]
"""

import contextvars
import logging as stdlib_logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from haystack import Document, component, logging
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage

from helpers.checks.prompt_guard import quote_data
from helpers.statutes.passages import passage
from llm_access.call_policy import LLMComponent

logger = logging.getLogger(__name__)

SYSTEM = "你是法律检索的相关性评估员。判断给出的法条能否帮助回答用户的问题，只回答“是”或“否”。"
# The question comes first and the passage last: every call for one question shares the system prompt and the
# question, which llama.cpp keeps in its KV cache (only the passage and the short suffix are evaluated per call).
USER = "问题：{query}\n\n法条：{passage}\n\n这条法条能帮助回答上面的问题吗？只回答“是”或“否”。"
GENERATION_KWARGS = {"max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 10}
# The generator warns on every reply cut at max_tokens; here one token is the point, so that warning is dropped,
# but only for the calls this ranker makes from the current thread.
GENERATOR_LOGGER = "haystack.components.generators.chat.openai"
_scoring = threading.local()


class _ExpectedTruncation(stdlib_logging.Filter):
    def filter(self, record: stdlib_logging.LogRecord) -> bool:
        return not (getattr(_scoring, "active", False) and getattr(record, "finish_reason", None) == "length")


def _silence_expected_truncation() -> None:
    target = stdlib_logging.getLogger(GENERATOR_LOGGER)
    if not any(isinstance(f, _ExpectedTruncation) for f in target.filters):
        target.addFilter(_ExpectedTruncation())


def yes_probability(reply: ChatMessage) -> float:
    """P(是) normalised against P(否) from the first token's top logprobs; the text decides without them."""
    content = (reply.meta.get("logprobs") or {}).get("content") or []
    if content:
        yes = no = 0.0
        for candidate in content[0].get("top_logprobs") or []:
            token = candidate.get("token", "").strip()
            if token.startswith("是"):
                yes += math.exp(candidate["logprob"])
            elif token.startswith(("否", "不")):
                no += math.exp(candidate["logprob"])
        if yes + no > 0:
            return yes / (yes + no)
    return 1.0 if (reply.text or "").strip().startswith("是") else 0.0


@component
class LLMRelevanceRanker(LLMComponent):
    """Reorders the first ``top_n`` documents by LLM relevance; the rest keep their order behind them.

    :param chat_generator: the LLM; ``None`` = the project's LLM factory (`llm_access.factory`) at warm-up. Every
        call goes through the project's one LLM call policy (`llm_access.call_policy`): cooldown, revive, guards.
    :param top_n: how many of the incoming documents are scored (one LLM call each).
    :param max_chars: characters of each passage shown to the LLM (after its label; its first sentences,
        `helpers.statutes.passages`).
    :param max_workers: concurrent LLM calls (a local llama.cpp server serves them one by one anyway).
    :param top_k: documents returned (``None``: all).
    :param role: which of the factory's LLMs scores (``main``, or ``light``: `LLM_LIGHT_MODEL`).
    """

    _params = ("top_n", "max_chars", "max_workers", "top_k")
    needs_logprobs = True  # P(是) from the first token's logprobs

    def __init__(
        self,
        chat_generator: OpenAIChatGenerator | None = None,
        top_n: int = 10,
        max_chars: int = 400,
        max_workers: int = 4,
        top_k: int | None = None,
        role: str = "main",
    ) -> None:
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        LLMComponent.__init__(self, chat_generator, role=role)  # @component re-creates the class: no super()
        self.top_n = top_n
        self.max_chars = max_chars
        self.max_workers = max_workers
        self.top_k = top_k
        _silence_expected_truncation()

    def _score(self, query: str, doc: Document) -> float:
        messages = [
            ChatMessage.from_system(SYSTEM),
            ChatMessage.from_user(USER.format(query=quote_data(query),
                                              passage=quote_data(passage(doc, self.max_chars)))),
        ]
        _scoring.active = True
        try:
            call = self.chat(messages, GENERATION_KWARGS)
        finally:
            _scoring.active = False
        if call.error or call.reply is None:  # a failure must not lose the evidence
            logger.warning("LLM relevance scoring failed, keeping retrieval order: {error}", error=call.error)
            return -1.0
        return yes_probability(call.reply)

    @component.output_types(documents=list[Document], rerank=dict)
    def run(self, query: str, documents: list[Document], top_n: int | None = None,
            top_k: int | None = None) -> dict[str, Any]:
        """Score the head of ``documents``; ties and failed calls keep the incoming order; ``top_k`` returned.

        :returns: ``documents`` (each scored one carries ``meta["llm_relevance"]``) and ``rerank``: candidates
            scored, LLM calls and seconds.
        """
        if self.chat_generator is None and documents:
            self.warm_up()
        started = time.perf_counter()
        head, tail = documents[: top_n or self.top_n], documents[top_n or self.top_n :]
        # each call runs in the caller's context: a cancelled run (`current_cancellation`) stops its calls too
        contexts = [contextvars.copy_context() for _ in head]
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            scores = list(pool.map(lambda pair: pair[0].run(self._score, query, pair[1]), zip(contexts, head)))
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        ranked = [replace(head[i], meta={**head[i].meta, "llm_relevance": scores[i]}) for i in order] + tail
        top_k = top_k or self.top_k
        rerank = {"scored": len(head), "llm_calls": len(head), "seconds": round(time.perf_counter() - started, 3)}
        return {"documents": ranked[:top_k] if top_k else ranked, "rerank": rerank}
