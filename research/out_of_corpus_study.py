"""Can the system tell that the corpus does not hold a question's decisive rule (issue 48, items 3 and 4)?

Two real sets: the 891 STARD train questions whose gold articles are in the corpus, and the 160 whose every gold
article lies in a document the corpus does not hold (judicial interpretations, State Council regulations;
`training_data/stard/stard_train_out_of_corpus.jsonl`). Each question is searched once through the bench store
(zero-shot e5-small, hybrid RRF, top 50; cached with `research/pair_rerank_study.py`'s pools) and described by

- **evidence** signals: how well the best articles match (best dense cosine, mean of the top 5, best BM25 score),
  whether the paths agree (overlap of the BM25 and dense top 10, the fused top article found by both), how
  concentrated the top 10 is on one law, the question's bigrams the best article covers, the question's length;
- **question** text: its e5 query embedding (384 numbers): what kind of rule it asks for.

A logistic model per feature set is trained out of fold: in-corpus questions in the shared 5 folds
(`benchmarks.folds`, by question), out-of-corpus questions grouped by the first document they cite (43 documents,
the largest first into the smallest fold), so every score is of a document unseen in training. The flag threshold is
chosen on the training folds so that at most ``--in-corpus-flag-rate`` of their in-corpus questions are flagged.

    .venv/bin/python research/out_of_corpus_study.py [--out research/reports/out_of_corpus_study.md]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from benchmarks.folds import FOLDS, fold_assignment, grouped_fold_assignment
from benchmarks.metrics import load_queries, query_metrics
from research.pair_rerank_study import LONG, cached_pools
from research.pool_features import bigrams

OUT_OF_CORPUS = Path(__file__).resolve().parents[1] / "training_data" / "stard" / "stard_train_out_of_corpus.jsonl"
EVIDENCE = ("best_cosine", "top5_cosine", "log_best_bm25", "path_overlap", "top_found_by_both", "top_law_share",
            "laws_in_top10", "best_bigram_share", "log_chars")


def evidence_features(pool: dict) -> list[float]:
    docs, query = pool["docs"], pool["query"]
    ranks: dict[str, dict[str, int]] = {"bm25": {}, "dense": {}}
    cosines, bm25 = [], []
    for doc in docs:
        for hit in doc.meta.get("retrieval", {}).get("hits", []):
            if hit["path"] in ranks:
                ranks[hit["path"]][doc.meta["key"]] = hit["rank"]
                (cosines if hit["path"] == "dense" else bm25).append(float(hit.get("score") or 0.0))
    top = sorted(cosines, reverse=True)
    bm25_top10 = {k for k, r in ranks["bm25"].items() if r <= 10}
    dense_top10 = {k for k, r in ranks["dense"].items() if r <= 10}
    laws = Counter(str(d.meta.get("law") or "") for d in docs[:10])
    first = docs[0] if docs else None
    grams = bigrams(query)
    covered = (sum(g in f"{first.meta.get('law', '')}{first.content or ''}" for g in grams) / len(grams)
               if first is not None and grams else 0.0)
    return [top[0] if top else 0.0, float(np.mean(top[:5])) if top else 0.0, math.log1p(max(bm25, default=0.0)),
            len(bm25_top10 & dense_top10) / 10, float(first is not None and all(first.meta["key"] in ranks[p]
                                                                                 for p in ranks)),
            laws.most_common(1)[0][1] / 10 if laws else 0.0, float(len(laws)), covered, math.log(len(query) + 1)]


def question_vectors(queries: list[str]) -> np.ndarray:
    from benchmarks.indexing import bench_settings
    from pipelines.embedders import text_embedder

    embedder = text_embedder(bench_settings())
    embedder.warm_up()
    return np.asarray([embedder.run(text=q)["embedding"] for q in queries], dtype=np.float64)


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels) else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--in-corpus-flag-rate", type=float, default=0.10)
    parser.add_argument("--out", default="research/reports/out_of_corpus_study.md")
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    inside, outside = cached_pools(50), cached_pools(50, OUT_OF_CORPUS)
    cited = [q["cited"][0] for q in load_queries(OUT_OF_CORPUS)]
    pools = inside + outside
    labels = np.asarray([0] * len(inside) + [1] * len(outside))
    in_fold = fold_assignment(len(inside))
    folds = np.asarray([in_fold[i] for i in range(len(inside))] + grouped_fold_assignment(cited))
    long_q = np.asarray([len(p["query"]) >= LONG for p in pools])
    good = np.asarray([query_metrics([d.meta["key"] for d in p["docs"]], p["gold"])["Hit@3"] if p["gold"] else 0.0
                       for p in pools]) > 0  # in-corpus evidence whose top 3 holds a gold article
    evidence = np.asarray([evidence_features(p) for p in pools])
    text = question_vectors([p["query"] for p in pools])
    sets = {"evidence signals": evidence, "question embedding": text, "both": np.hstack([evidence, text])}

    rows = []
    for name, x in sets.items():
        scores, flagged = np.zeros(len(pools)), np.zeros(len(pools), dtype=bool)
        for fold in range(FOLDS):
            train, test = folds != fold, folds == fold
            model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=5000,
                                                                       class_weight="balanced"))
            model.fit(x[train], labels[train])
            train_scores = model.predict_proba(x[train])[:, 1]
            threshold = np.quantile(train_scores[labels[train] == 0], 1 - args.in_corpus_flag_rate)
            scores[test] = model.predict_proba(x[test])[:, 1]
            flagged[test] = scores[test] > threshold
        inside_mask, outside_mask = labels == 0, labels == 1
        rows.append(
            f"| {name} | {auc(scores, labels):.3f} | "
            f"{auc(scores[~long_q | outside_mask], labels[~long_q | outside_mask]):.3f} "
            f"| {auc(scores[long_q | outside_mask], labels[long_q | outside_mask]):.3f} | "
            f"{flagged[outside_mask].mean():.3f} | {flagged[inside_mask].mean():.3f} | "
            f"{flagged[inside_mask & long_q].mean():.3f} | {flagged[inside_mask & good].mean():.3f} |")
        print(rows[-1], flush=True)

    report = f"""# Telling out-of-corpus questions apart, out of fold (issue 48)

Command: `.venv/bin/python research/out_of_corpus_study.py --in-corpus-flag-rate {args.in_corpus_flag_rate:g}`
{len(inside)} in-corpus STARD train questions ({int(long_q[:len(inside)].sum())} of >= {LONG} characters) and
{len(outside)} out-of-corpus ones ({len(set(cited))} first-cited documents). Bench store (zero-shot e5-small,
all 23,995 articles), hybrid RRF top 50. Logistic regression (standardised, C = 0.1, balanced classes); in-corpus
questions in the shared 5 folds, out-of-corpus ones grouped by their first cited document, so each is scored by a
model that never saw a question citing that document. The flag threshold is the training folds'
{1 - args.in_corpus_flag_rate:.0%} quantile of in-corpus scores (at most {args.in_corpus_flag_rate:.0%} of them
flagged in training).

Columns: AUC of out-of-corpus against all / short / long in-corpus questions; the share flagged out of fold among
out-of-corpus questions (caught), among in-corpus ones, among long in-corpus ones, and among in-corpus questions
whose top 3 already holds a gold article (the cost: good evidence sent to the web).

| features | AUC all | AUC short | AUC long | caught | in-corpus flagged | long flagged | good evidence flagged |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Evidence signals: {", ".join(EVIDENCE)}.
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
