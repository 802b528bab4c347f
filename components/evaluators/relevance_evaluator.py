"""RelevanceEvaluator: a trained retrieval evaluator (CRAG's idea) that judges evidence without an LLM call.

A small model trained on labelled question–article pairs (``python -m pipelines train``) reads cheap signals that
retrieval already produced for each of the top ``top_n`` passages: the dense cosine between the question and the
passage, the share of the question's words the passage contains, each path's best rank, whether both paths
found it, and its fused position. Two logistic models, stored in ``evaluator.json``, turn them into

- a per-passage probability that the passage is a gold article for the question, and
- the probability that the judged passages hold one, fitted on out-of-fold passage scores (so it is calibrated
  out of sample); the evidence passes when it reaches ``threshold`` (chosen by cross-validation at training).

The output has the shape of `LLMQualityJudge`'s ``evaluation`` (``total`` is the probability on the 0–40 scale
the loop and the trace use; ``relevance`` on 0–10), plus ``probability``, ``threshold`` and ``passages``. With a
``note_writer`` (``JUDGE=both``) the LLM judge is called only when the evidence fails, to write the note on what
is missing for the rewriter; a pass costs no LLM call.

Usage::

    from components.evaluators.relevance_evaluator import RelevanceEvaluator
    evaluator = RelevanceEvaluator(model="models/relevance-evaluator")
    evaluator.warm_up()
    evaluation = evaluator.run(query="公司收集我的个人信息需要我同意吗", documents=fused_docs)["evaluation"]
    evaluation["probability"], evaluation["passed"], evaluation["passages"]
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_from_dict, component_to_dict

from components.evaluators.llm_quality_judge import LLMQualityJudge
from helpers.checks.unsettled import unsettled_note
from helpers.records.rounds import document_summary
from helpers.records.trained_files import RETRAIN, read_trained_json
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer

CALIBRATION_FILE = "evaluator.json"
FEATURES = ("dense_cosine", "word_share", "found_bm25", "found_dense", "log_position", "log_bm25_rank",
            "log_dense_rank")
EVIDENCE_INPUTS = "sigmoid of the best, best-two mean and mean passage logits"  # evaluator.json's contract
MISSING_RANK = 200  # a path that did not return the passage (paths return their top 100)
MISSING_COSINE = 0.7  # the dense path did not return it: below the cosines e5 gives its top 100


def question_words(tokenizer: JiebaTokenizer, query: str) -> set[str]:
    """The question's content words (jieba, stopwords removed, at least two characters)."""
    return {w for w in tokenizer.tokenize(query) if len(w) > 1}


def passage_features(words: set[str], doc: Document, position: int) -> list[float]:
    """The signals of one fused passage, in `FEATURES` order (from ``meta["retrieval"]`` and its text)."""
    hits = doc.meta.get("retrieval", {}).get("hits", [])
    ranks = {path: min((h["rank"] for h in hits if h["path"] == path), default=MISSING_RANK)
             for path in ("bm25", "dense")}
    cosines = [float(h["score"]) for h in hits if h["path"] == "dense" and h.get("score") is not None]
    text = f"{doc.meta.get('law', '')}{doc.content or ''}".lower()
    share = sum(w in text for w in words) / len(words) if words else 0.0
    return [max(cosines, default=MISSING_COSINE), share, float(ranks["bm25"] < MISSING_RANK),
            float(ranks["dense"] < MISSING_RANK), math.log(position + 1), math.log(ranks["bm25"]),
            math.log(ranks["dense"])]


def evidence_features(passage_logits: list[float]) -> list[float]:
    """Evidence-level inputs (`EVIDENCE_INPUTS`): the best passage logit, the mean of the best two and the mean of
    all judged, each through the sigmoid. Fitted on the logits themselves, the evidence model was too sure in the
    middle and too unsure at the ends (out of fold: said 0.55, 0.37 good; said 0.92, 0.99; said 0.15, 0.28); on this
    scale it is calibrated (`benchmarks/reports/judge_slices.md`), and each input still rises with every score."""
    ranked = sorted(passage_logits, reverse=True)
    return [sigmoid(v) for v in (ranked[0], sum(ranked[:2]) / len(ranked[:2]), sum(ranked) / len(ranked))]


def linear(model: dict[str, Any], x: list[float]) -> float:
    """A standardised logistic model's logit: Σ coef·(x − mean)/scale + intercept."""
    return model["intercept"] + sum(c * (v - m) / s for c, v, m, s in zip(model["coef"], x, model["mean"],
                                                                         model["scale"], strict=True))


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def load_calibration(model: str | Path) -> dict[str, Any]:
    """``evaluator.json`` of a trained evaluator folder; a clear error when the folder is not one."""
    path = Path(model) / CALIBRATION_FILE
    data = read_trained_json(model, CALIBRATION_FILE, "relevance evaluator", "set JUDGE=llm")
    for name in ("passage", "evidence", "threshold"):
        if name not in data:
            raise ValueError(f"{path} lacks '{name}'; {RETRAIN}")
    if list(data.get("features", [])) != list(FEATURES) or data.get("evidence_inputs") != EVIDENCE_INPUTS:
        raise ValueError(f"{path} was trained on other features; {RETRAIN}")
    return data


@component
class RelevanceEvaluator:
    """Calibrated P(relevant) per passage and for the evidence; passes at ``threshold``.

    :param model: a folder written by ``python -m pipelines train`` (holding ``evaluator.json``).
    :param top_n: passages judged (the ones the answer reads).
    :param threshold: evidence probability that passes; ``None`` = the cross-validated one in ``evaluator.json``.
    :param note_writer: an LLM judge asked for the missing-information note on a fail only (``JUDGE=both``).
    """

    def __init__(self, model: str, top_n: int = 5, threshold: float | None = None,
                 note_writer: LLMQualityJudge | None = None) -> None:
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        if threshold is not None and not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        self.model = model
        self.top_n = top_n
        self.threshold = threshold
        self.note_writer = note_writer
        self._trained: dict[str, Any] | None = None
        self._tokenizer: JiebaTokenizer | None = None

    def to_dict(self) -> dict[str, Any]:
        writer = component_to_dict(self.note_writer, "note_writer") if self.note_writer is not None else None
        return default_to_dict(self, model=self.model, top_n=self.top_n, threshold=self.threshold, note_writer=writer)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevanceEvaluator:
        params = data["init_parameters"]
        if params.get("note_writer"):
            params["note_writer"] = component_from_dict(LLMQualityJudge, params["note_writer"], "note_writer")
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self._trained is None:
            self._trained = load_calibration(self.model)
            self._tokenizer = JiebaTokenizer(char_ngrams=())
        if self.note_writer is not None:
            self.note_writer.warm_up()

    def _model(self) -> tuple[dict[str, Any], JiebaTokenizer]:
        if self._trained is None or self._tokenizer is None:
            raise RuntimeError("RelevanceEvaluator is not warmed up; call warm_up() first")
        return self._trained, self._tokenizer

    def passage_logits(self, query: str, documents: list[Document]) -> list[float]:
        """The passage model's logit for each document (its position in ``documents`` is a signal)."""
        trained, tokenizer = self._model()
        words = question_words(tokenizer, query)
        return [linear(trained["passage"], passage_features(words, doc, i)) for i, doc in enumerate(documents)]

    def evidence_probability(self, passage_logits: list[float]) -> float:
        if not passage_logits:
            return 0.0
        return sigmoid(linear(self._model()[0]["evidence"], evidence_features(passage_logits)))

    @component.output_types(evaluation=dict)
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        started = time.perf_counter()
        judged = documents[: self.top_n]
        logits = self.passage_logits(query, judged)
        threshold = self.threshold if self.threshold is not None else float(self._model()[0]["threshold"])
        probability = self.evidence_probability(logits)
        passages = [{"key": document_summary(doc)["key"], "probability": round(sigmoid(x), 4)}
                    for doc, x in zip(judged, logits, strict=True)]
        passed = probability >= threshold
        evaluation: dict[str, Any] = {
            "judge": "evaluator", "probability": round(probability, 4), "threshold": threshold,
            "passages": passages, "total": round(40.0 * probability, 2), "passed": passed, "scores": None,
            "relevance": round(10.0 * probability, 2),
            "reasoning": f"训练的相关性评估器：证据含相关法条的概率为 {probability:.2f}（通过线 {threshold:.2f}）",
            "missing": "" if passed else self.unsettled(query, judged), "error": None, "llm_calls": 0,
        }
        if not passed and self.note_writer is not None:
            note = self.note_writer.run(query=query, documents=documents)["evaluation"]
            evaluation["llm_calls"] = int(note.get("llm_calls", 0))
            evaluation["llm_judge"] = {k: note.get(k) for k in ("scores", "total", "error")}
            if note.get("missing") and not note.get("error"):
                evaluation["missing"] = str(note["missing"])
        evaluation["seconds"] = round(time.perf_counter() - started, 4)
        return {"evaluation": evaluation}

    def unsettled(self, query: str, documents: list[Document]) -> str:
        """The note on a fail: the question's point the passages do not settle and the words none of them holds."""
        _, tokenizer = self._model()
        words = [w for w in tokenizer.tokenize(query) if len(w) > 1]
        return unsettled_note(query, words, [f"{d.meta.get('law', '')}{d.content or ''}" for d in documents])
