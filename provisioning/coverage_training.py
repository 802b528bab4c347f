"""Training the coverage model: which questions turn on a document the knowledge base does not hold.

Labelled questions say it: the training pairs' questions are answered by articles the corpus holds, and the
out-of-corpus questions (``training_data/stard/stard_train_out_of_corpus.jsonl``: STARD questions whose every
gold article lies in a judicial interpretation or regulation the corpus lacks) name the document that settles
them. A logistic model over the question's character 1–2-grams (TF-IDF) scores how much a question looks like
the out-of-corpus ones; the answer names the document of the most similar out-of-corpus question.

What it can and cannot know (`research/reports/coverage_classifier_study.md`): new questions about a document
other labelled questions cite are told apart at AUC 0.80 out of fold (known gaps); questions about a document no
labelled question cites, at 0.54 (unknown gaps: no better than chance). The threshold is set on out-of-fold
scores so that about ``flag_rate`` of the in-corpus training questions are flagged.

The model is JSON (`CoverageCheck` reads it): the vocabulary, IDF weights, coefficients, threshold, and the
out-of-corpus questions with their documents.

Usage::

    outside = load_outside("training_data/stard/stard_train_out_of_corpus.jsonl")
    model = train_coverage([p.query for p in pairs], outside)
    model["threshold"], model["cv"]["auc"]
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from components.evaluators.coverage_check import COVERAGE_FILE
from provisioning.training_pairs import TrainingDataError, jsonl_objects

DEFAULT_OUTSIDE = Path(__file__).resolve().parents[1] / "training_data" / "stard" / "stard_train_out_of_corpus.jsonl"
MIN_OUTSIDE = 20


@dataclass(frozen=True)
class OutsideQuestion:
    """A question the knowledge base cannot answer, and the document that would (its first cited one)."""

    query: str
    document: str
    qid: str = ""


@dataclass(frozen=True)
class CoverageRecipe:
    """:param flag_rate: the share of in-corpus training questions flagged out of fold (sets the threshold).
    :param regularisation: the logistic model's C.
    :param folds: the cross-validation folds that give the out-of-fold scores."""

    flag_rate: float = 0.03
    regularisation: float = 1.0
    folds: int = 5
    ngram_range: tuple[int, int] = (1, 2)

    def __post_init__(self) -> None:
        if not 0 < self.flag_rate < 1:
            raise ValueError(f"flag_rate must be between 0 and 1, got {self.flag_rate}")
        if self.folds < 2:
            raise ValueError(f"folds must be at least 2, got {self.folds}")

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def load_outside(path: str | Path) -> list[OutsideQuestion]:
    """Out-of-corpus questions: one JSON object per line with ``query`` and ``cited`` (the documents that settle
    it, first the decisive one); a one-line `TrainingDataError` on a missing or malformed file."""
    path = Path(path)
    items, bad = jsonl_objects(path, "out-of-corpus questions file")
    questions = []
    for number, item in items:
        query = item.get("query") if isinstance(item, dict) else None
        cited = item.get("cited") if isinstance(item, dict) else None
        if not isinstance(query, str) or not query.strip() or not isinstance(cited, list) or not cited \
                or not isinstance(cited[0], str) or not cited[0].strip():
            bad.append(f"line {number}: needs 'query' text and a non-empty 'cited' list of document names")
        else:
            questions.append(OutsideQuestion(query.strip(), cited[0].strip(), str(item.get("qid", number))))
    if bad:
        raise TrainingDataError(f"{path}: {len(bad)} malformed line(s), e.g. {'; '.join(bad[:3])}")
    return questions


def outside_digest(questions: list[OutsideQuestion]) -> str:
    text = "\n".join(f"{q.query}\t{q.document}" for q in questions)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _vectoriser(recipe: CoverageRecipe, vocabulary: dict[str, int] | None = None):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char", ngram_range=tuple(recipe.ngram_range), sublinear_tf=True,
                           vocabulary=vocabulary)


def _classifier(recipe: CoverageRecipe):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=recipe.regularisation, max_iter=5000, class_weight="balanced")


def out_of_fold_scores(texts: list[str], labels: np.ndarray, recipe: CoverageRecipe) -> np.ndarray:
    """Each question's score from a model fitted without it (stratified folds, fixed seed)."""
    from sklearn.model_selection import StratifiedKFold

    scores = np.zeros(len(texts))
    for train, test in StratifiedKFold(recipe.folds, shuffle=True, random_state=0).split(texts, labels):
        vectoriser = _vectoriser(recipe)
        model = _classifier(recipe).fit(vectoriser.fit_transform([texts[i] for i in train]), labels[train])
        scores[test] = model.predict_proba(vectoriser.transform([texts[i] for i in test]))[:, 1]
    return scores


def train_coverage(inside: list[str], outside: list[OutsideQuestion],
                   recipe: CoverageRecipe | None = None) -> dict[str, Any]:
    """Fit the coverage model on in-corpus questions (``inside``) and out-of-corpus ones; the threshold flags
    ``recipe.flag_rate`` of the in-corpus questions' out-of-fold scores. Returns the JSON-able model."""
    from sklearn.metrics import roc_auc_score

    recipe = recipe or CoverageRecipe()
    if len(outside) < MIN_OUTSIDE:
        raise TrainingDataError(f"{len(outside)} out-of-corpus questions; at least {MIN_OUTSIDE} are needed to "
                                "train the coverage model")
    if len(inside) < MIN_OUTSIDE:
        raise TrainingDataError(f"{len(inside)} in-corpus questions; at least {MIN_OUTSIDE} are needed")
    texts = list(inside) + [q.query for q in outside]
    labels = np.asarray([0] * len(inside) + [1] * len(outside))
    scores = out_of_fold_scores(texts, labels, recipe)
    threshold = float(np.quantile(scores[labels == 0], 1 - recipe.flag_rate))
    vectoriser = _vectoriser(recipe)
    model = _classifier(recipe).fit(vectoriser.fit_transform(texts), labels)
    return {
        "recipe": {**asdict(recipe), "ngram_range": list(recipe.ngram_range)},
        "vocabulary": {gram: int(i) for gram, i in vectoriser.vocabulary_.items()},
        "idf": [round(float(v), 6) for v in vectoriser.idf_],
        "coef": [round(float(v), 6) for v in model.coef_[0]],
        "intercept": float(model.intercept_[0]),
        "threshold": threshold,
        "outside": [{"query": q.query, "document": q.document} for q in outside],
        "questions": {"inside": len(inside), "outside": len(outside)},
        "cv": {"auc": float(roc_auc_score(labels, scores)),
               "flagged_inside": float((scores[labels == 0] > threshold).mean()),
               "caught_outside": float((scores[labels == 1] > threshold).mean()),
               "note": "stratified folds by question: documents other folds cite (known gaps)"},
    }


def write_coverage(model: dict[str, Any], folder: Path) -> Path:
    path = folder / COVERAGE_FILE
    path.write_text(json.dumps(model, ensure_ascii=False), encoding="utf-8")
    return path
