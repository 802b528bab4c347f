"""Training the relevance evaluator: two logistic models over retrieval's own signals, calibrated out of fold.

1. **Passage model**: for each question, its hybrid top ``candidates`` (10) as round 1 retrieves them; label 1
   for a gold article. Features: `components.evaluators.relevance_evaluator.FEATURES`, standardised.
2. **Evidence model**: the passage model is refitted ``folds`` times leaving a group of questions out; the
   left-out questions' passage scores (never scored by a model that saw them) give, per question, the features of
   its judged top ``judged`` (5) (`evidence_features`: the best, best-two mean and mean logit, each through the
   sigmoid), and a logistic fit on them says P(a gold article is among the judged passages).
   That fit is the calibration: its probabilities are out of sample by construction.
3. **Threshold**: the probability that classifies those out-of-fold questions best.
4. **``oof_auc``**: how well the best out-of-fold passage score of the judged passages separates evidence with a
   gold article from evidence without one (ROC AUC; no model saw the question it scores). It is what `setup`
   prints to say whether a judge is informative.

A cross-encoder fine-tuned from e5-small (`CrossEncoderTrainer`, `BinaryCrossEntropyLoss`, hybrid hard negatives)
was tried first and dropped: one CPU epoch on 4/5 of STARD train (6 minutes) gave an evidence AUC of 0.55–0.57 and
a passage AUC of 0.55–0.63 on the held-out fifth, against 0.81 here (README, "The judge"); a third recipe with the
consultation stories and not-in-corpus negatives (`research/reports/cross_encoder_study.md`) reached 0.56 / 0.55.

Usage::

    model = train_evaluator(pairs, candidates, Recipe())
    Path("models/relevance-evaluator/evaluator.json").write_text(json.dumps(model))
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from components.evaluators.relevance_evaluator import (
    EVIDENCE_INPUTS,
    FEATURES,
    evidence_features,
    linear,
    passage_features,
    question_words,
    sigmoid,
)
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer
from provisioning.training_pairs import Pair

if TYPE_CHECKING:
    from haystack import Document


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the trained model (its digest keys the cache)."""

    candidates: int = 10  # passages per question the passage model learns from
    judged: int = 5  # passages the evaluator judges (JUDGE_TOP_N)
    folds: int = 5  # out-of-fold passage scores for the evidence model
    regularisation: float = 10.0  # logistic C of the passage model (1.0 for the 3-input evidence model)
    seed: int = 0
    # the evidence model's inputs (a new set retrains: the digest keys the cache)
    evidence_inputs: str = EVIDENCE_INPUTS

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def feature_rows(pairs: list[Pair], candidates: list[list[Document]], depth: int) -> tuple[list, list, list]:
    """Features, labels and question index of each question's first ``depth`` candidates."""
    tokenizer = JiebaTokenizer(char_ngrams=())
    x, y, group = [], [], []
    for i, (pair, docs) in enumerate(zip(pairs, candidates, strict=True)):
        words = question_words(tokenizer, pair.query)
        for position, doc in enumerate(docs[:depth]):
            x.append(passage_features(words, doc, position))
            y.append(int(doc.meta.get("key") in pair.gold))
            group.append(i)
    return x, y, group


def fit_logistic(x: list[list[float]], y: list[int], c: float) -> dict[str, Any]:
    """A standardised logistic regression, exported as plain numbers (no sklearn at query time)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if len(set(y)) < 2:
        raise ValueError("training needs both relevant and irrelevant examples; the pairs' gold articles are never "
                         "(or always) among the retrieved candidates")
    scaler = StandardScaler().fit(x)
    fit = LogisticRegression(C=c, max_iter=5000).fit(scaler.transform(x), y)
    return {"coef": [float(v) for v in fit.coef_[0]], "intercept": float(fit.intercept_[0]),
            "mean": [float(v) for v in scaler.mean_], "scale": [float(v) if v > 0 else 1.0 for v in scaler.scale_]}


def best_threshold(probabilities: list[float], labels: list[int]) -> float:
    """The pass threshold with the best accuracy on these questions; among equals, the middle one."""
    candidates = sorted({round(p, 3) for p in probabilities if 0.0 < round(p, 3) < 1.0} | {0.5})
    accuracy = {t: sum((p >= t) == bool(y) for p, y in zip(probabilities, labels, strict=True)) for t in candidates}
    best = [t for t in candidates if accuracy[t] == max(accuracy.values())]
    return best[len(best) // 2]


def question_folds(pairs: list[Pair], folds: int, seed: int) -> dict[int, int]:
    """Pair index → fold, by question id: a question's retellings (the consultation set) share its fold, so no
    out-of-fold score comes from a model that saw the same question in other words. Pairs without an id are
    questions of their own."""
    ids = [pair.qid or f"#{i}" for i, pair in enumerate(pairs)]
    unique = list(dict.fromkeys(ids))
    order = list(range(len(unique)))
    random.Random(seed).shuffle(order)
    fold_of_id = {unique[u]: k % folds for k, u in enumerate(order)}
    return {i: fold_of_id[qid] for i, qid in enumerate(ids)}


def train_evaluator(pairs: list[Pair], candidates: list[list[Document]], recipe: Recipe) -> dict[str, Any]:
    """The passage model, the out-of-fold evidence calibration and the threshold, as ``evaluator.json`` data."""
    x, y, group = feature_rows(pairs, candidates, recipe.candidates)
    passage = fit_logistic(x, y, recipe.regularisation)
    fold_of = question_folds(pairs, recipe.folds, recipe.seed)
    out_of_fold = [0.0] * len(x)
    for fold in range(recipe.folds):
        inside = [j for j, q in enumerate(group) if fold_of[q] != fold]
        model = fit_logistic([x[j] for j in inside], [y[j] for j in inside], recipe.regularisation)
        for j, q in enumerate(group):
            if fold_of[q] == fold:
                out_of_fold[j] = linear(model, x[j])
    evidence_x, evidence_y = [], []
    for q in range(len(pairs)):
        judged = [j for j, g in enumerate(group) if g == q][: recipe.judged]
        if judged:
            evidence_x.append(evidence_features([out_of_fold[j] for j in judged]))
            evidence_y.append(int(any(y[j] for j in judged)))
    evidence = fit_logistic(evidence_x, evidence_y, 1.0)
    probabilities = [sigmoid(linear(evidence, row)) for row in evidence_x]
    return {"features": list(FEATURES), "evidence_inputs": EVIDENCE_INPUTS, "passage": passage, "evidence": evidence,
            "threshold": best_threshold(probabilities, evidence_y), "recipe": asdict(recipe),
            "questions": len(pairs), "passages": len(x), "good_evidence_share": sum(evidence_y) / len(evidence_y),
            "oof_auc": roc_auc([row[0] for row in evidence_x], evidence_y)}


def roc_auc(scores: list[float], labels: list[int]) -> float:
    """The probability that a random positive outscores a random negative (ties count half)."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))
