"""CoverageCheck: the judge's third verdict, "the knowledge base does not hold the decisive rule".

The evidence judges (`RelevanceEvaluator`, `LLMQualityJudge`) score whether the retrieved articles are about the
question. A question that turns on a judicial interpretation or a regulation the knowledge base lacks still finds
on-topic articles of a law, and they pass (out of fold, 0.525 of such STARD questions: `benchmarks/reports/
judge_slices.md`). This component reads the question itself with a model trained on labelled questions
(``python -m pipelines train``: `provisioning.coverage_training`, ``coverage.json``): when the question looks like
those whose rule lies in a document the corpus does not hold, and that document (the one the most similar
labelled question cites) is not in the knowledge base now, the round's verdict becomes ``uncovered``: not
passed, the loop goes straight to web search (no reworded re-search), and the judge's note, the answer's first
line, names the document and how to add it.

It knows the gaps its labelled questions show (AUC 0.80 out of fold on new questions about those documents) and
not others (0.54 on documents no labelled question cites): `research/reports/coverage_classifier_study.md`.
Once the named document is indexed (``index --files``), the check stays silent for it.

Usage::

    from components.evaluators.coverage_check import CoverageCheck
    check = CoverageCheck(model="models/coverage-model", document_store=store)
    check.warm_up()
    evaluation = check.run(query="我可以从银行获得贷款之后再转借给他人吗？", evaluation=judge_evaluation)["evaluation"]
    evaluation["verdict"], evaluation["coverage"]["document"]
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict, logging

from components.retrievers.store_search import StoreSearch
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import shared_store_from_dict
from helpers.records.trained_files import RETRAIN, read_trained_json

logger = logging.getLogger(__name__)

COVERAGE_FILE = "coverage.json"
UNCOVERED = "uncovered"
GAP_NOTE = "问题的决定性规则可能在《{document}》中，本知识库未收录（可用 index --files 添加）"
NAME_NOISE = re.compile(r"^中华人民共和国|[《》〈〉\s]")


def document_name(name: str) -> str:
    """A document's name as compared with the knowledge base's law names (no 中华人民共和国, no brackets)."""
    return NAME_NOISE.sub("", name)


def load_coverage(model: str | Path) -> dict[str, Any]:
    """``coverage.json`` of a trained coverage model folder; a clear error when it is not one."""
    path = Path(model) / COVERAGE_FILE
    data = read_trained_json(model, COVERAGE_FILE, "coverage model", "set COVERAGE_CHECK=off")
    missing = [k for k in ("recipe", "vocabulary", "idf", "coef", "intercept", "threshold", "outside") if k not in data]
    if missing or len(data.get("idf", [])) != len(data.get("vocabulary", {})) or \
            len(data.get("coef", [])) != len(data.get("vocabulary", {})) or not data.get("outside"):
        raise ValueError(f"{path} is incomplete ({', '.join(missing) or 'sizes disagree'}); {RETRAIN}")
    return data


@component
class CoverageCheck:
    """Turns a judged round into ``uncovered`` when the question needs a document the knowledge base lacks.

    :param model: a folder written by ``python -m pipelines train`` (holding ``coverage.json``).
    :param document_store: the knowledge base whose law names say which documents it holds (None: assume it
        holds none of the documents the model names).
    :param threshold: the question score that flags; ``None`` = the trained one (set out of fold).
    """

    def __init__(self, model: str, document_store: KnowledgeBaseStore | None = None,
                 threshold: float | None = None) -> None:
        if threshold is not None and not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        self.model = model
        self.document_store = document_store
        self.threshold = threshold
        self._search = StoreSearch(document_store) if document_store is not None else None
        self._trained: dict[str, Any] | None = None
        self._vectoriser: Any = None
        self._outside: Any = None

    def to_dict(self) -> dict[str, Any]:
        store = self.document_store.to_dict() if self.document_store is not None else None
        return default_to_dict(self, model=self.model, document_store=store, threshold=self.threshold)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoverageCheck:
        params = data["init_parameters"]
        if params.get("document_store"):
            params["document_store"] = shared_store_from_dict(params["document_store"])
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self._trained is None:
            from sklearn.feature_extraction.text import TfidfVectorizer

            trained = load_coverage(self.model)
            vectoriser = TfidfVectorizer(analyzer="char", ngram_range=tuple(trained["recipe"]["ngram_range"]),
                                         sublinear_tf=True, vocabulary=trained["vocabulary"])
            vectoriser.idf_ = np.asarray(trained["idf"], dtype=np.float64)
            self._outside = vectoriser.transform([q["query"] for q in trained["outside"]])
            self._vectoriser, self._trained = vectoriser, trained
        if self._search is not None:
            self._search.warm_up()

    def _model(self) -> dict[str, Any]:
        if self._trained is None:
            raise RuntimeError("CoverageCheck is not warmed up; call warm_up() first")
        return self._trained

    def score(self, query: str) -> tuple[float, list[str]]:
        """P(the question needs a document the corpus lacks), and the documents of the labelled out-of-corpus
        questions most like it (most similar first, each once)."""
        trained = self._model()
        vector = self._vectoriser.transform([query])
        logit = float((vector @ np.asarray(trained["coef"]))[0]) + float(trained["intercept"])
        probability = 1.0 / (1.0 + math.exp(-logit)) if logit >= 0 else math.exp(logit) / (1.0 + math.exp(logit))
        similarity = (self._outside @ vector.T).toarray().ravel()
        order = np.argsort(-similarity, kind="stable")
        documents = list(dict.fromkeys(trained["outside"][int(i)]["document"] for i in order[:5]))
        return probability, documents

    def held(self, document: str) -> bool:
        """Whether the knowledge base holds ``document`` now (a law of that name, 中华人民共和国 aside)."""
        if self._search is None:
            return False
        wanted = document_name(document)
        return any(wanted and wanted in document_name(law) for law in self._search.laws())

    @component.output_types(evaluation=dict)
    def run(self, query: str, evaluation: dict) -> dict[str, Any]:
        """``evaluation`` with ``coverage`` added (probability, threshold, the document named, whether it flagged)
        and, when it flags, ``verdict`` ``uncovered``, not passed (``evidence_passed``: the judge's own verdict),
        and the note naming the document."""
        threshold = self.threshold if self.threshold is not None else float(self._model()["threshold"])
        probability, documents = self.score(query)
        document = documents[0] if documents else None
        flagged = probability >= threshold and document is not None and not self.held(document)
        evaluation = {**evaluation, "coverage": {"probability": round(probability, 4), "threshold": threshold,
                                                 "document": document, "flagged": flagged}}
        if flagged:
            logger.info("The question looks like one the knowledge base cannot answer (P={p:.2f}); "
                        "the decisive rule may be in {document}", p=probability, document=document)
            evaluation.update(verdict=UNCOVERED, passed=False, evidence_passed=bool(evaluation.get("passed")),
                              missing=GAP_NOTE.format(document=document))
        return {"evaluation": evaluation}
