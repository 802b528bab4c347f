"""Names that several layers share, defined once: retrieval paths, answer modes, evidence source kinds and the
optional reranker's component name.

Usage::

    from helpers.records.contracts import Mode, RETRIEVAL_PATHS, is_web
    mode = Mode.parse("agentic")          # a ValueError that lists the choices for anything else
    RETRIEVAL_PATHS                       # ("citation", "bm25", "dense")
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from haystack import Document


class RetrievalPath(StrEnum):
    """The retrieval paths; each is also the name of its component in every query pipeline."""

    CITATION = "citation"
    BM25 = "bm25"
    DENSE = "dense"


RETRIEVAL_PATHS = tuple(path.value for path in RetrievalPath)  # plain strings: they name components
RERANKER = "reranker"  # the optional reranker's component name
ROUND_RANKER = "round_ranker"  # the agentic loop's optional widen-and-rerank step from round 2 on


class Mode(StrEnum):
    """How a question is answered: the agentic loop, one retrieval (rag), the tool-calling agent, or retrieval only."""

    AGENTIC = "agentic"
    RAG = "rag"
    AGENT = "agent"
    RETRIEVE = "retrieve"

    @classmethod
    def parse(cls, value: object, allowed: Iterable[Mode] | None = None) -> Mode:
        """``value`` as a mode among ``allowed`` (default: all); a `ValueError` that lists them otherwise."""
        choices = tuple(allowed or cls)
        for mode in choices:
            if value == mode.value:
                return mode
        raise ValueError(f"mode must be one of {', '.join(m.value for m in choices)}; got {value!r}")


PIPELINE_MODES = (Mode.AGENTIC, Mode.RAG)  # the two query pipelines
CHAT_MODES = (Mode.AGENTIC, Mode.RAG, Mode.AGENT)  # a chat reply needs an answer: retrieve is for the REST API

WEB_SOURCE = "web"  # ``meta["source"]`` of a web search result; statutes and files name their own source


def is_web(doc: Document) -> bool:
    return doc.meta.get("source") == WEB_SOURCE
