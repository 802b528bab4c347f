"""Hayhooks deployment ``agentic_rag``: ``POST /agentic_rag/run`` and the OpenAI-compatible chat endpoint.

``run_api(query, mode, top_k, filters, knowledge_base, as_of)`` returns the answer, citations, judge scores and trace.
``run_chat_completion_async`` serves ``/v1/chat/completions`` (model ``agentic_rag``), streaming or not; the stream
carries the answer as it is generated and ends with a ``rag_result`` event holding citations and trace.
"""

from collections.abc import AsyncGenerator
from typing import Any

from fastapi_openai_compat import ChatCompletion
from hayhooks import BasePipelineWrapper
from pydantic import StrictInt

from interfaces.chat_api import ChatAPI


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        self.api = ChatAPI()
        self.api.warm_up()  # models, store and LLM are loaded once here, not per request

    def run_api(
        self,
        query: str,
        mode: str = "agentic",
        top_k: StrictInt = 10,  # strict: JSON true is not 1
        filters: dict | None = None,
        knowledge_base: str | None = None,
        as_of: str | None = None,
    ) -> dict:
        """
        Answer a legal question from a knowledge base, with citations and the trace.

        Args:
            query: the question in Chinese.
            mode: "agentic" (rewrite, judge, loop, web fallback), "rag" (one retrieval), "agent" (tool-calling
                agent) or "retrieve" (the ranked articles only, no LLM).
            top_k: articles retrieved per round (1-50).
            filters: Haystack metadata filters, e.g. {"field": "meta.law", "operator": "==", "value": "..."}.
            knowledge_base: the knowledge base (collection) to ask; default the statute corpus.
            as_of: a date, YYYY-MM-DD: search the statutes in force on that day (default: in force today).
        """
        # a cancelled run (the client left, the server is stopping) is a 503 from ChatAPI.ask, like its other errors
        return self.api.ask(query=query, mode=mode, top_k=top_k, filters=filters, knowledge_base=knowledge_base,
                            as_of=as_of).to_dict()

    async def run_chat_completion_async(self, model: str, messages: list[dict],
                                        body: dict) -> ChatCompletion | AsyncGenerator[Any, None]:
        """OpenAI-compatible chat over the knowledge base; follow-up questions use the conversation history. A client
        that disconnects mid-stream cancels its run. A non-streamed answer's id is its ``answer_id`` (for
        ``POST /feedback``)."""
        return await self.api.chat(messages, body)
