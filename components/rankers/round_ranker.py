"""RoundRanker: from round 2 on, the evidence the judge failed is widened and read pair by pair (issue 47, item 2).

When round 1 misses the decisive article, it is most often just below the cut, next to a hit, or named by one
(`research/reports/round2_paths_study.md`); searching reworded queries rarely finds more. So from round
``from_round`` on, this component takes the fused top ``depth``, adds the neighbours (±``span``, same law) of the best
``best`` hits and the articles they refer to (``本法第X条``), all within the run's filters (a statute version date
stays applied), and has a ranker that reads question and article together (the LLM's yes/no reranker) order the
pool; with ``fuse`` its order is fused with the incoming one by reciprocal rank fusion (Haystack's
`DocumentJoiner`), so the first stage's evidence is not thrown away. Before that round the fused order passes
through, cut to ``top_k``: round 1 costs nothing more.

Usage::

    from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
    from components.rankers.round_ranker import RoundRanker
    ranker = RoundRanker(document_store=store, ranker=LLMRelevanceRanker(), depth=30)
    ranker.warm_up()
    out = ranker.run(query="试用期工资不得低于多少", documents=fused_docs, plan={"round": 2})
    out["documents"], out["rerank"]   # the reranked top_k; {"pool", "added", "llm_calls", "seconds"}
"""

from __future__ import annotations

import time
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.components.joiners import DocumentJoiner
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.utils import deserialize_type

from components.retrievers.store_search import SearchingComponent
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import shared_store_from_dict
from helpers.statutes.neighbours import neighbour_keys, referred_keys

logger = logging.getLogger(__name__)


@component
class RoundRanker(SearchingComponent):
    """Passes round 1's fused order through (``top_k`` kept); from round ``from_round`` on, widens the pool and
    reranks it with ``ranker``.

    :param document_store: the knowledge base the neighbours and referred articles are read from.
    :param ranker: a ranker component with ``run(query, documents, top_n, top_k)`` that reads the pairs, e.g.
        `LLMRelevanceRanker`; it keeps a document's place when it cannot score it.
    :param depth: fused ranks in the widened pool.
    :param best: the hits whose neighbours and referred articles join the pool.
    :param span: neighbours on each side of a hit (same law, article number ± span).
    :param from_round: the first round that is widened (round numbers start at 1).
    :param fuse: fuse the ranker's order with the incoming order (RRF) instead of taking it alone.
    :param top_k: documents returned.
    """

    def __init__(self, document_store: KnowledgeBaseStore, ranker: Any, depth: int = 30, best: int = 3, span: int = 2,
                 from_round: int = 2, top_k: int = 10, fuse: bool = True) -> None:
        for name, value, least in (("depth", depth, 1), ("best", best, 0), ("span", span, 0),
                                   ("from_round", from_round, 1)):
            if value < least:
                raise ValueError(f"{name} must be >= {least}, got {value}")
        if not callable(getattr(ranker, "run", None)):
            raise TypeError(f"ranker must be a ranker component with a run() method, got {type(ranker).__name__}")
        self._bind_search(document_store, top_k=top_k)
        self.ranker = ranker
        self.depth = depth
        self.best = best
        self.span = span
        self.from_round = from_round
        self.fuse = fuse
        self._fusion = DocumentJoiner(join_mode="reciprocal_rank_fusion")

    def warm_up(self) -> None:
        SearchingComponent.warm_up(self)
        if hasattr(self.ranker, "warm_up"):
            self.ranker.warm_up()

    def widened(self, documents: list[Document], filters: dict[str, Any] | None) -> list[Document]:
        """The fused top ``depth``, then the articles next to or named by the best ``best`` of them that are held
        under ``filters`` and not already in the pool."""
        pool = list(documents[: self.depth])
        held = {str(d.meta.get("key")) for d in pool}
        wanted: list[str] = []
        for doc in pool[: self.best]:
            key, law = str(doc.meta.get("key", "")), str(doc.meta.get("law", ""))
            wanted += neighbour_keys(key, self.span) + (referred_keys(law, doc.content or "") if law else [])
        wanted = [key for key in dict.fromkeys(wanted) if key not in held]
        return pool + [d for d in self._search.articles(wanted, filters) if str(d.meta.get("key")) not in held]

    @component.output_types(documents=list[Document], rerank=dict)
    def run(self, query: str, documents: list[Document], plan: dict | None = None,
            filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, Any]:
        """:param plan: the round's plan from the rewriter (its ``round`` number; round 1 without one).

        :returns: ``documents``, the top ``top_k``; ``rerank``: empty before ``from_round``, else the pool's size,
            the articles added to it, the ranker's LLM calls and its seconds.
        """
        top_k = top_k or self.top_k
        if int((plan or {}).get("round", 1)) < self.from_round or not documents:
            return {"documents": documents[:top_k], "rerank": {}}
        started = time.perf_counter()
        pool = self.widened(documents, filters if filters is not None else self.filters)
        ranked = self.ranker.run(query=query, documents=pool, top_n=len(pool))["documents"]
        if self.fuse:  # the first stage's order (the additions are not in it) and the ranker's, whose meta is kept
            ranked = self._fusion.run(documents=[documents[: self.depth], ranked])["documents"]
        rerank = {"pool": len(pool), "added": len(pool) - min(len(documents), self.depth),
                  "llm_calls": sum("llm_relevance" in d.meta for d in ranked),
                  "seconds": round(time.perf_counter() - started, 3)}
        logger.info("Round {round}: reranked a pool of {pool} ({added} added) in {seconds} s",
                    round=(plan or {}).get("round"), **rerank)
        return {"documents": ranked[:top_k], "rerank": rerank}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict(),
                               ranker=component_to_dict(self.ranker, "ranker"), depth=self.depth, best=self.best,
                               span=self.span, from_round=self.from_round, top_k=self.top_k, fuse=self.fuse)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoundRanker:
        params = data["init_parameters"]
        params["document_store"] = shared_store_from_dict(params["document_store"])
        params["ranker"] = component_from_dict(deserialize_type(params["ranker"]["type"]), params["ranker"], "ranker")
        return default_from_dict(cls, data)
