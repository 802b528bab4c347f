"""EvaluatorRanker: reorders the fused candidates by the trained relevance evaluator's passage probability.

``RERANKER=evaluator``. The probability reads the signals of each passage's place in the fused list, so only the
top ``top_n`` are reordered and the rest keep their order after them. Cross-validated on STARD it leaves MRR@10
level with the fused order (`benchmarks/reports/judge_calibration.md`), which is why it is not the default.

Usage::

    from components.rankers.evaluator_ranker import EvaluatorRanker
    ranker = EvaluatorRanker(model="models/relevance-evaluator", top_n=20)
    ranker.warm_up()
    docs = ranker.run(query="公司收集个人信息需要同意吗", documents=fused_docs)["documents"]
"""

from dataclasses import replace
from typing import Any

from haystack import Document, component

from components.evaluators.relevance_evaluator import RelevanceEvaluator, sigmoid


@component
class EvaluatorRanker:
    """:param model: a trained evaluator folder. :param top_n: candidates reordered (the rest follow unchanged).
    :param top_k: documents returned (``None``: all)."""

    def __init__(self, model: str, top_n: int = 20, top_k: int | None = None) -> None:
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.model = model
        self.top_n = top_n
        self.top_k = top_k
        self._evaluator = RelevanceEvaluator(model=model, top_n=top_n)

    def warm_up(self) -> None:
        self._evaluator.warm_up()

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        head, tail = documents[: self.top_n], documents[self.top_n:]
        logits = self._evaluator.passage_logits(query, head)
        scored = [replace(doc, score=sigmoid(x)) for doc, x in zip(head, logits, strict=True)]
        ranked = sorted(scored, key=lambda d: -(d.score or 0.0)) + tail
        top_k = top_k or self.top_k
        return {"documents": ranked[:top_k] if top_k else ranked}
