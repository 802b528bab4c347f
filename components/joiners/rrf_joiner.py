"""RRFJoiner: reciprocal rank fusion across retrieval paths and across queries, deduplicated by article key.

RRF score of a document = Σ over rankings that contain it of ``weight(path) × weight(query) / (k + rank)``, with
ranks starting at **1** and k = 60 by default. ``weight(query)`` is ``primary_weight`` for the rankings of
``primary_query`` (the user's question, searched beside its rewrites) and 1 otherwise, so that rewrites add
candidates without outvoting what the question itself found (`research/reports/query_weight_study.md`). Each fused
document keeps, in ``meta["retrieval"]``, its best rank
and every (path, query, rank) that found it, for the trace.

Usage::

    from components.joiners.rrf_joiner import RRFJoiner
    joiner = RRFJoiner(top_k=10)
    fused = joiner.run(rankings=[bm25_rankings, dense_rankings])["documents"]
    # the question's own rankings count double against its rewrites':
    fused = RRFJoiner(primary_weight=2.0).run(rankings=[bm25_rankings], primary_query="…")["documents"]
"""


from dataclasses import replace
from typing import Any

from haystack import Document, component
from haystack.core.component.types import Variadic

from helpers.records.ranking import Ranking


def _doc_key(doc: Document) -> str:
    return str(doc.meta.get("key") or doc.id)


@component
class RRFJoiner:
    """Fuses any number of `Ranking` lists with reciprocal rank fusion.

    :param k: the RRF constant (60 as in Cormack et al. 2009).
    :param top_k: documents returned (``None`` = all).
    :param path_weights: multiplier per path name (e.g. ``{"citation": 10.0}``); missing paths weigh 1.0.
    :param primary_weight: multiplier for the rankings of ``primary_query`` (given to `run`).
    """

    def __init__(self, k: int = 60, top_k: int | None = 10, path_weights: dict[str, float] | None = None,
                 primary_weight: float = 1.0) -> None:
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if primary_weight <= 0:
            raise ValueError(f"primary_weight must be > 0, got {primary_weight}")
        self.primary_weight = primary_weight
        self.k = k
        self.top_k = top_k
        self.path_weights = path_weights or {}

    @component.output_types(documents=list[Document])
    def run(self, rankings: Variadic[list[Ranking]], top_k: int | None = None,
            primary_query: str | None = None) -> dict[str, list[Document]]:
        """Fuse; ``documents`` are sorted by RRF score (ties: best rank, then first seen).

        :param primary_query: the query whose rankings weigh ``primary_weight`` (``None``: all weigh the same).
        """
        top_k = top_k if top_k is not None else self.top_k
        scores: dict[str, float] = {}
        first: dict[str, Document] = {}
        hits: dict[str, list[dict[str, Any]]] = {}
        for ranking in (r for group in rankings for r in group):
            weight = self.path_weights.get(ranking.path, 1.0)
            if primary_query is not None and ranking.query == primary_query:
                weight *= self.primary_weight
            for rank, doc in enumerate(ranking.documents, start=1):
                key = _doc_key(doc)
                first.setdefault(key, doc)
                scores[key] = scores.get(key, 0.0) + weight / (self.k + rank)
                hits.setdefault(key, []).append(
                    {"path": ranking.path, "query": ranking.query, "rank": rank, "score": doc.score}
                )
        order = sorted(scores, key=lambda key: (-scores[key], min(h["rank"] for h in hits[key])))
        fused = []
        for key in order[:top_k] if top_k is not None else order:
            doc = first[key]
            meta = {
                **doc.meta,
                "retrieval": {
                    "rrf_score": scores[key],
                    "best_rank": min(h["rank"] for h in hits[key]),
                    "paths": sorted({h["path"] for h in hits[key]}),
                    "hits": hits[key],
                },
            }
            fused.append(replace(doc, score=scores[key], meta=meta))
        return {"documents": fused}
