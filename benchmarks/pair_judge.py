"""Does the LLM's pair score help the judge? The evaluator's evidence probability with and without it (issue 62, 3).

For a fixed sample of the out-of-fold rows `benchmarks/judge_calibration.py` cached (the hybrid top 20 of each
question as asked, the probability the evaluator of the question's fold gave its top 5), the LLM reads the judged
top 5 pair by pair (`LLMRelevanceRanker`: P(是) for "can this article help answer the question?", each article as
its label and first sentences). The judge's question is whether a gold article is among those five ("good"); for
an out-of-corpus question no evidence is good.

Compared, by ROC AUC (good against not good, out-of-corpus questions among the not good) and by the out-of-corpus
pass rate at the same pass rate of good evidence:

- the evaluator's probability alone (out of fold, as shipped);
- the best pair score of the five alone;
- both, in a logistic model (the evaluator's logit and the best pair score) fitted by 5-fold cross-validation over
  the sample, so no question is scored by a fit that saw it.

    .venv/bin/python benchmarks/judge_calibration.py --embedder base --llm-sample 0   # the out-of-fold rows
    .venv/bin/python benchmarks/pair_judge.py --sample 80 --outside 80
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from benchmarks.judge_calibration import CACHE, IN_CORPUS, OUT_OF_CORPUS, OUT_OF_CORPUS_QUERIES, auc
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from document_store.statute_db import StatuteDB

JUDGED = 5


def chosen_rows(rows: list[dict], kind: str, size: int) -> list[dict]:
    """The first ``size`` rows of ``kind`` in a fixed shuffle (seed 0): a smaller sample is a prefix of a larger."""
    part = [r for r in rows if r["kind"] == kind]
    random.Random(0).shuffle(part)
    return part[:size]


def score_rows(rows: list[dict], chars: int, log: Path) -> dict[tuple[str, str], dict]:
    """The LLM's P(是) for each judged article of each row (resumable from ``log``)."""
    done = {}
    if log.exists():
        done = {(r["kind"], r["qid"]): r for r in map(json.loads, log.read_text("utf-8").splitlines())}
    todo = [r for r in rows if (r["kind"], r["qid"]) not in done]
    if todo:
        queries = {(IN_CORPUS, str(q["qid"])): q["query"] for q in load_queries(DEFAULT_QUERIES)}
        queries |= {(OUT_OF_CORPUS, str(q["qid"])): q["query"] for q in load_queries(OUT_OF_CORPUS_QUERIES)}
        db = StatuteDB()  # the statute database the bench store was indexed from (the store may be in use)
        by_key = {f"{d.meta['law']}{d.meta['article_no']}": d for law in db.law_counts() for d in db.articles(law)}
        ranker = LLMRelevanceRanker(top_n=JUDGED, max_chars=chars, max_workers=1)
        ranker.warm_up()
        with log.open("a", encoding="utf-8") as out:
            for n, row in enumerate(todo, start=1):
                documents = [by_key[key] for key in row["keys"][:JUDGED]]
                started = time.perf_counter()
                scored = ranker.run(query=queries[(row["kind"], row["qid"])], documents=documents)["documents"]
                by_id = {d.id: d.meta["llm_relevance"] for d in scored}
                record = {"kind": row["kind"], "qid": row["qid"], "chars": chars,
                          "scores": [by_id[d.id] for d in documents],
                          "seconds": round(time.perf_counter() - started, 3)}
                done[(row["kind"], row["qid"])] = record
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                print(f"{n}/{len(todo)} {row['kind']} {record['seconds']:.1f}s max {max(record['scores']):.2f}",
                      flush=True)
    return done


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def combined_scores(features: list[list[float]], labels: list[int]) -> list[float]:
    """Out-of-fold probabilities of a logistic model over ``features`` (5 stratified folds, seed 0)."""
    scores = [float("nan")] * len(labels)
    folds = min(5, sum(labels), len(labels) - sum(labels))
    if folds < 2:  # too few of a class to cross-validate
        return scores
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=0).split(features, labels):
        model = LogisticRegression().fit([features[i] for i in train], [labels[i] for i in train])
        for i, p in zip(test, model.predict_proba([features[i] for i in test])[:, 1], strict=True):
            scores[i] = float(p)
    return scores


def outside_pass_at(scores: list[float], labels: list[int], outside: list[bool], good_pass: float) -> float:
    """The out-of-corpus pass rate at the threshold that passes ``good_pass`` of the good evidence."""
    good = sorted((s for s, y in zip(scores, labels, strict=True) if y), reverse=True)
    threshold = good[max(0, math.ceil(good_pass * len(good)) - 1)]
    passed = [s >= threshold for s, o in zip(scores, outside, strict=True) if o]
    return sum(passed) / len(passed)


def report(rows: list[dict], scored: dict[tuple[str, str], dict]) -> str:
    rows = [r for r in rows if (r["kind"], r["qid"]) in scored]
    labels = [int(r["kind"] == IN_CORPUS and any(r["labels"][:JUDGED])) for r in rows]
    outside = [r["kind"] == OUT_OF_CORPUS for r in rows]
    best = [max(scored[(r["kind"], r["qid"])]["scores"]) for r in rows]
    evaluator = [r["probability"] for r in rows]
    both = combined_scores([[logit(p), b] for p, b in zip(evaluator, best, strict=True)], labels)
    # the pass rate of good evidence the shipped evaluator reaches at its own trained threshold
    good_pass = statistics.mean(r["probability"] >= r["threshold"] for r, y in zip(rows, labels, strict=True) if y)
    shipped_outside = statistics.mean(r["probability"] >= r["threshold"] for r, o in zip(rows, outside, strict=True)
                                      if o)
    lines = [(f"{sum(not o for o in outside)} in-corpus questions ({sum(labels)} with good evidence), "
             f"{sum(outside)} out-of-corpus questions; pass rate of good evidence held at {good_pass:.3f} (the "
             f"evaluator's at its trained threshold, where it passes {shipped_outside:.3f} of the out-of-corpus "
             "questions)."), "",
             "| judge | AUC, all | AUC, in corpus only | AUC, good against out of corpus | out-of-corpus pass rate |",
             "|---|---|---|---|---|"]
    for name, scores in (("evaluator (out of fold)", evaluator), ("best pair score of the 5", best),
                         ("both (logistic, 5-fold CV over the sample)", both)):
        positives = [s for s, y in zip(scores, labels, strict=True) if y]
        negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
        in_negatives = [s for s, y, o in zip(scores, labels, outside, strict=True) if not y and not o]
        out_negatives = [s for s, o in zip(scores, outside, strict=True) if o]
        lines.append(f"| {name} | {auc(positives, negatives):.3f} | {auc(positives, in_negatives):.3f} | "
                     f"{auc(positives, out_negatives):.3f} | "
                     f"{outside_pass_at(scores, labels, outside, good_pass):.3f} |")
    seconds = [s["seconds"] for s in scored.values()]
    lines += ["", (f"LLM seconds per question (5 calls): median {statistics.median(seconds):.1f}, "
              f"mean {statistics.mean(seconds):.1f}.")]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=100, help="in-corpus questions")
    parser.add_argument("--outside", type=int, default=100, help="out-of-corpus questions")
    parser.add_argument("--chars", type=int, default=200, help="characters of each article the LLM reads")
    parser.add_argument("--oof", default=str(CACHE / "evaluator_oof_base_5.jsonl"))
    parser.add_argument("--log", default="benchmarks/runs/pair_judge.jsonl")
    parser.add_argument("--out", default="benchmarks/reports/pair_judge.md")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    oof = Path(args.oof)
    if not oof.exists():
        sys.exit(f"{oof} is missing: run benchmarks/judge_calibration.py --embedder base --llm-sample 0 first")
    rows = [json.loads(line) for line in oof.read_text("utf-8").splitlines()]
    rows = chosen_rows(rows, IN_CORPUS, args.sample) + chosen_rows(rows, OUT_OF_CORPUS, args.outside)
    log = Path(args.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    scored = {} if args.report_only else score_rows(rows, args.chars, log)
    if args.report_only and log.exists():
        scored = {(r["kind"], r["qid"]): r for r in map(json.loads, log.read_text("utf-8").splitlines())}
    text = (f"# The LLM's pair score as a judge's input\n\nCommand: `.venv/bin/python benchmarks/pair_judge.py "
            f"{' '.join(sys.argv[1:])}`\n\n" + report(rows, scored))
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
