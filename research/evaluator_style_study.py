"""Is the trained evaluator calibrated on consultation-style and not-in-corpus evidence, and what training fixes it?

Three kinds of judged evidence, each the hybrid top 20 of the bench store (zero-shot e5-small):

- ``stard``: a STARD train question as asked (what the evaluator is trained on today);
- ``story``: its retelling from the consultation set (`benchmarks/consultation_set.py`), same gold;
- ``absent``: the STARD question searched with its gold laws filtered out of the store (``meta.law not in``):
  the answer is not in the corpus, so no passage is gold and a pass is a false pass. ``absent_story`` likewise.

Out of sample: 5 folds by question id (`benchmarks.folds`, a story in its STARD question's fold); each fold's
evaluator is trained by `provisioning.evaluator_training.train_evaluator` on the other folds' questions of the
kinds a recipe names, and judges the held-out fold of every kind. Reported per kind: share of good evidence (a gold
article in the judged top 5), AUC, ECE, pass rate at the trained threshold.

    .venv/bin/python research/evaluator_style_study.py [--out research/reports/evaluator_style_study.md]

Retrievals are cached in ``DATA_DIR/study_cache/evaluator_candidates.pkl``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.consultation_set import DEFAULT_OUT
from benchmarks.folds import fold_assignment, stard_pairs
from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.judge_calibration import auc, expected_calibration_error
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from components.evaluators.relevance_evaluator import (
    evidence_features,
    linear,
    passage_features,
    question_words,
    sigmoid,
)
from helpers.statutes.labels import key_law
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer
from pipelines.retrieval import retrieve
from provisioning.evaluator_training import Recipe, train_evaluator
from provisioning.training_pairs import Pair

KINDS = ("stard", "story", "absent", "absent_story")
RECIPES = {"stard (today)": ("stard",), "stard+story": ("stard", "story"),
           "stard+absent": ("stard", "absent"), "all kinds": KINDS}
DEPTH = 20
JUDGED = 5


def candidates(pairs: dict[str, list[Pair]], cache: Path) -> dict[str, list[list]]:
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    store, pipeline = bench_retrieval(bench_settings(), top_k=DEPTH)
    found: dict[str, list[list]] = {}
    for kind, items in pairs.items():
        absent = kind.startswith("absent")
        found[kind] = []
        for n, pair in enumerate(items, start=1):
            laws = sorted({key_law(k) for k in pair.gold})
            filters = {"field": "meta.law", "operator": "not in", "value": laws} if absent else None
            found[kind].append(retrieve(pipeline, [pair.query], top_k=DEPTH, filters=filters))
            if n % 200 == 0:
                print(f"{kind}: {n}/{len(items)}", flush=True)
    store.close()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(found))
    return found


def study_pairs() -> dict[str, list[Pair]]:
    """Each kind's questions: all STARD train questions, the stories, and the retold ones again with their gold
    laws filtered out."""
    stard = stard_pairs(DEFAULT_QUERIES)
    stories = [Pair(q["query"], tuple(q["gold"]), str(q["qid"])) for q in load_queries(str(DEFAULT_OUT))]
    told = {p.qid for p in stories}
    return {"stard": stard, "story": stories, "absent": [p for p in stard if p.qid in told], "absent_story": stories}


def cached_candidates(pairs: dict[str, list[Pair]]) -> dict[str, list[list]]:
    return candidates(pairs, bench_settings().data_dir / "study_cache" / "evaluator_candidates.pkl")


def judge(model: dict, tokenizer: JiebaTokenizer, query: str, docs: list) -> float:
    words = question_words(tokenizer, query)
    logits = [linear(model["passage"], passage_features(words, d, i)) for i, d in enumerate(docs[:JUDGED])]
    return sigmoid(linear(model["evidence"], evidence_features(logits))) if logits else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="research/reports/evaluator_style_study.md")
    args = parser.parse_args()
    pairs = study_pairs()
    stard = pairs["stard"]
    fold_of_qid = {p.qid: f for i, p in enumerate(stard) for f in [fold_assignment(len(stard))[i]]}
    found = cached_candidates(pairs)
    tokenizer = JiebaTokenizer(char_ngrams=())
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, kinds in RECIPES.items():
        scored: dict[str, list[tuple[float, int, float]]] = {k: [] for k in KINDS}
        for fold in range(5):
            train_pairs, train_docs = [], []
            for kind in kinds:
                for pair, docs in zip(pairs[kind], found[kind], strict=True):
                    if fold_of_qid[pair.qid] != fold:
                        train_pairs.append(pair)
                        train_docs.append(docs)
            model = train_evaluator(train_pairs, train_docs, Recipe())
            for kind in KINDS:
                for pair, docs in zip(pairs[kind], found[kind], strict=True):
                    if fold_of_qid[pair.qid] == fold:
                        good = int(any(d.meta["key"] in pair.gold for d in docs[:JUDGED]))
                        scored[kind].append((judge(model, tokenizer, pair.query, docs), good, model["threshold"]))
        results[name] = {}
        for kind, rows in scored.items():
            probs, labels = [p for p, _, _ in rows], [g for _, g, _ in rows]
            results[name][kind] = {
                "n": len(rows), "good": statistics.mean(labels),
                "auc": auc([p for p, g in zip(probs, labels) if g], [p for p, g in zip(probs, labels) if not g]),
                "ece": expected_calibration_error(probs, labels),
                "pass": statistics.mean(p >= t for p, _, t in rows)}
        print(name, results[name], flush=True)
    lines = ["| training kinds | judged kind | questions | good share | pass rate | AUC | ECE |",
             "|---|---|---|---|---|---|---|"]
    for name, per_kind in results.items():
        for kind, m in per_kind.items():
            lines.append(f"| {name} | {kind} | {m['n']} | {m['good']:.3f} | {m['pass']:.3f} | "
                         f"{m['auc']:.3f} | {m['ece']:.3f} |")
    Path(args.out).write_text(f"""# The evaluator off STARD: consultation-style and not-in-corpus evidence (out of fold)

Command: `.venv/bin/python research/evaluator_style_study.py`
Bench store (zero-shot e5-small, all 23,995 articles); hybrid top {DEPTH}, judged top {JUDGED}; 5 folds by question
id; each fold's evaluator trained (`train_evaluator`, today's features and recipe) on the other folds' questions of
the listed kinds. ``absent``: the question searched with its gold laws filtered out (nothing gold can be found, so
every pass is false). AUC is undefined (nan) where a kind has no good evidence.

{chr(10).join(lines)}
""", encoding="utf-8")


if __name__ == "__main__":
    main()
