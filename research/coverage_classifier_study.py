"""Which questions does the corpus not cover, read from the question alone (issue 48, items 3–4)?

The evidence signals tell out-of-corpus questions apart at AUC 0.58 (`research/reports/out_of_corpus_study.md`),
the LLM's reading of the best articles no better (`coverage_llm_study.md`). A question classifier is the other
source the issue names: STARD names the document each question cites, so 891 questions are labelled "the corpus
holds it" and 160 "it lies in a document the corpus lacks" (judicial interpretations, regulations).

The shipped recipe (`provisioning.coverage_training`: a logistic model over the question's character 1–2-grams,
TF-IDF, its threshold set on out-of-fold scores of its training questions so that ``rate`` of the in-corpus ones
are flagged) is trained on each outer fold's training questions and read back by the shipped `CoverageCheck`;
``--with-embedding`` adds the same model over the e5 query embedding (research only).
Two ways to hold out the out-of-corpus questions, because they answer different questions:

- **by document** (grouped folds, as `judge_calibration.py` scores them): a document no training question cited —
  an unknown gap;
- **by question** (the shared random folds): new questions about documents other questions cited — a known gap,
  the case of a held-out STARD question citing, say, the 民间借贷 规定 that 22 train questions cite.

Each flag is combined with the trained evaluator's out-of-fold verdict (`benchmarks/cache/evaluator_oof_base_5.jsonl`,
written by `judge_calibration.py --embedder base`): a flagged question is not passed (the third verdict), so the
table gives the pass rate each slice would have, beside its share of good evidence. For the flagged out-of-corpus
questions it also gives how often the document the check names (that of the most similar out-of-corpus training
question) is the one cited.

    .venv/bin/python research/coverage_classifier_study.py [--out research/reports/coverage_classifier_study.md]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from benchmarks.folds import FOLDS, fold_assignment, outside_fold_assignment
from benchmarks.judge_calibration import CACHE, IN_CORPUS, OUT_OF_CORPUS, OUT_OF_CORPUS_QUERIES, RETOLD, RETOLD_QUERIES
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from components.evaluators.coverage_check import CoverageCheck
from provisioning.coverage_training import CoverageRecipe, OutsideQuestion, train_coverage, write_coverage

LONG = 30
RATES = (0.03, 0.05, 0.10)
JUDGED = 5  # the evaluator judges the top 5: "good" = a gold article among them


def product_check(inside: list[str], outside: list[OutsideQuestion], rate: float, folder: Path) -> CoverageCheck:
    """The shipped recipe (`provisioning.coverage_training`) trained on one outer fold's training questions, read
    back by the shipped component (no store: every named document counts as missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_coverage(train_coverage(inside, outside, CoverageRecipe(flag_rate=rate)), folder)
    check = CoverageCheck(model=str(folder))
    check.warm_up()
    return check


def fit_scores(x_train, y_train, x_test):
    """The test scores, and the training questions' scores out of an inner 4-fold split (in-sample scores of the
    training questions are too low to set a threshold on)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    model = LogisticRegression(C=1.0, max_iter=5000, class_weight="balanced")
    inner = cross_val_predict(model, x_train, y_train, cv=4, method="predict_proba")[:, 1]
    return inner, model.fit(x_train, y_train).predict_proba(x_test)[:, 1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--oof", default=str(CACHE / "evaluator_oof_base_5.jsonl"))
    parser.add_argument("--with-embedding", action="store_true", help="also the e5 query embedding (needs the model)")
    parser.add_argument("--out", default="research/reports/coverage_classifier_study.md")
    args = parser.parse_args()
    inside, outside = load_queries(DEFAULT_QUERIES), load_queries(OUT_OF_CORPUS_QUERIES)
    retold = load_queries(RETOLD_QUERIES)
    oof = {(r["kind"], str(r["qid"])): r for r in map(json.loads, Path(args.oof).read_text(encoding="utf-8")
                                                        .splitlines())}
    items = ([(q, IN_CORPUS) for q in inside] + [(q, OUT_OF_CORPUS) for q in outside]
             + [(q, RETOLD) for q in retold])
    judged = [oof[(kind, str(q["qid"]))] for q, kind in items]
    queries = [q["query"] for q, _ in items]
    kinds = np.asarray([kind for _, kind in items])
    labels = (kinds == OUT_OF_CORPUS).astype(int)
    cited = [q["cited"][0] if kind == OUT_OF_CORPUS else None for q, kind in items]
    chars = np.asarray([len(q) for q in queries])
    passed = np.asarray([r["probability"] >= r["threshold"] for r in judged])
    good = np.asarray([any(r["labels"][:JUDGED]) for r in judged])
    in_fold = fold_assignment(len(inside))
    qid_fold = {q["qid"]: in_fold[i] for i, q in enumerate(inside)}
    labelled = [OutsideQuestion(q["query"], q["cited"][0], str(q["qid"])) for q in outside]
    schemes = {"by document (unknown gaps)": outside_fold_assignment(labelled, "document"),
               "by question (known gaps)": outside_fold_assignment(labelled, "question")}
    scratch = Path(tempfile.mkdtemp(prefix="coverage_study_"))
    features = {"character 1–2-grams (shipped recipe)": None}
    if args.with_embedding:
        from research.out_of_corpus_study import question_vectors

        features["e5 query embedding"] = question_vectors(queries)

    slices = {
        "short in corpus": (kinds == IN_CORPUS) & (chars < LONG),
        "long in corpus": (kinds == IN_CORPUS) & (chars >= LONG),
        "retold (stress)": kinds == RETOLD,
        "out of corpus": kinds == OUT_OF_CORPUS,
    }
    base = " | ".join(f"{passed[m].mean():.3f} / {good[m].mean():.3f}" for m in slices.values())
    lines = [f"| evaluator alone | – | – | – | – | {base} | – |"]
    for scheme, outside_folds in schemes.items():
        folds = np.asarray([qid_fold[q["qid"]] if kind != OUT_OF_CORPUS else 0 for q, kind in items])
        folds[kinds == OUT_OF_CORPUS] = outside_folds
        for feature, vectors in features.items():
            scores = np.zeros(len(items))
            flagged = {rate: np.zeros(len(items), dtype=bool) for rate in RATES}
            named: list[str | None] = [None] * len(items)
            for fold in range(FOLDS):
                # retold questions never train: they are the stress set, scored by their source's fold
                train = (folds != fold) & (kinds != RETOLD)
                test_idx = np.where(folds == fold)[0]
                train_idx = np.where(train)[0]
                if vectors is None:  # the shipped recipe and component, one per flag rate
                    fold_inside = [queries[i] for i in train_idx if kinds[i] == IN_CORPUS]
                    fold_outside = [OutsideQuestion(queries[i], cited[i])
                                    for i in train_idx if kinds[i] == OUT_OF_CORPUS]
                    for rate in RATES:
                        check = product_check(fold_inside, fold_outside, rate, scratch / f"{scheme[:2]}{fold}{rate}")
                        for i in test_idx:
                            coverage = check.run(query=queries[i],
                                                 evaluation={"passed": True})["evaluation"]["coverage"]
                            scores[i], named[i] = coverage["probability"], coverage["document"]
                            flagged[rate][i] = coverage["flagged"]
                    continue
                x_train, x_test = vectors[train_idx], vectors[test_idx]
                train_scores, scores[test_idx] = fit_scores(x_train, labels[train_idx], x_test)
                for rate in RATES:
                    threshold = np.quantile(train_scores[kinds[train_idx] == IN_CORPUS], 1 - rate)
                    flagged[rate][test_idx] = scores[test_idx] > threshold
            from sklearn.metrics import roc_auc_score

            in_or_out = (kinds == IN_CORPUS) | (kinds == OUT_OF_CORPUS)
            auc = roc_auc_score(labels[in_or_out], scores[in_or_out])
            for rate in RATES:
                flag = flagged[rate]
                after = passed & ~flag
                cells = " | ".join(f"{after[m].mean():.3f} / {good[m].mean():.3f}" for m in slices.values())
                out = slices["out of corpus"]
                caught = flag & out
                right = sum(named[i] == cited[i] for i in np.where(caught)[0]) if vectors is None else 0
                named_right = f"{right / max(1, caught.sum()):.3f}" if vectors is None else "–"
                lines.append(f"| {scheme} | {feature} | {auc:.3f} | {rate:.2f} | "
                             f"{flag[out].mean():.3f} / {flag[kinds == IN_CORPUS].mean():.3f} / "
                             f"{flag[(kinds == IN_CORPUS) & good].mean():.3f} | {cells} | {named_right} |")
                print(lines[-1], flush=True)
    header = " | ".join(f"{name}: pass / good" for name in slices)
    report = f"""# A question classifier for what the corpus does not cover (issue 48, items 3–4)

Command: `.venv/bin/python research/coverage_classifier_study.py {' '.join(sys.argv[1:])}`
{int((kinds == IN_CORPUS).sum())} in-corpus STARD train questions, {int((kinds == OUT_OF_CORPUS).sum())} out-of-corpus
ones ({len({q['cited'][0] for q in outside})} first-cited documents), {int((kinds == RETOLD).sum())} retellings (scored,
never trained on). The shipped recipe (logistic regression, balanced classes, on the question's character
1–2-grams; threshold from out-of-fold scores of its own training questions, flagging ``rate`` of the in-corpus
ones), trained on each outer fold's training questions and read back by `CoverageCheck`; in-corpus questions in the
shared 5 folds; out-of-corpus ones held out **by document** (a document no training question cited) or **by
question** (new questions about documents other training questions cited; `benchmarks.folds.outside_fold_assignment`).
A flagged question is not passed (the third verdict); the evaluator's verdicts are its out-of-fold ones
(`{Path(args.oof).name}`, zero-shot e5-small store, hybrid top 5).

Columns: AUC (out of corpus against in corpus); the flag rate asked for; flagged among out-of-corpus / in-corpus /
in-corpus with good evidence; per slice the pass rate after the flag beside the share of good evidence; among the
flagged out-of-corpus questions, the share for which the check names the document the question cites
(what the answer would name).

| held out | features | AUC | rate | flagged: out / in / good in | {header} | document named right |
|---|---|---|---|---|{"---|" * len(slices)}---|
{chr(10).join(lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
