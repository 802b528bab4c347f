"""Can a cross-encoder fine-tuned from e5-small judge evidence better than the feature evaluator (issue 31, item 3)?

The same judged evidence as `research/evaluator_style_study.py` (hybrid top 20 of the bench store, zero-shot
e5-small, cached): STARD train questions, their consultation-style retellings, and both searched with the gold laws
filtered out (``absent``: nothing gold can be found). 5 folds by question id, the same as that study's.

For each fold, a cross-encoder (`sentence_transformers.cross_encoder.CrossEncoder` from the e5-small weights, a
fresh one-logit head) is trained with `CrossEncoderTrainer` and `BinaryCrossEntropyLoss` on the other folds'
questions: every gold article (label 1) and the ``--negatives`` best-ranked non-gold candidates (label 0) of each
STARD question and story, and the top ``--absent-negatives`` of each not-in-corpus search. It then scores the
held-out fold's top 20 of every kind. Reported per kind, out of fold:

- evidence AUC / ECE / pass rate of "a gold article among the judged top 5" from the best passage's probability
  (pass at 0.5), against the feature evaluator of the study it extends (trained on the same folds);
- the two combined: a logistic on [feature evaluator logit, best cross-encoder logit], fitted on one half of the
  held-out fold and applied to the other (and swapped), so no number is in-sample;
- R@10 / MRR@10 of the top 20 reordered by the cross-encoder, against the hybrid order;
- ms to score 5 passages.

    .venv/bin/python research/cross_encoder_study.py [--folds 0 1 2 3 4] [--epochs 2]

Each fold's scores are cached in ``DATA_DIR/study_cache/cross_encoder/`` (a rerun resumes); the report is written
from whatever folds are cached.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.folds import fold_assignment
from benchmarks.indexing import bench_settings
from benchmarks.judge_calibration import auc, expected_calibration_error
from benchmarks.metrics import mean_metrics, query_metrics
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer
from provisioning.embedder_training import freeze_lower_layers, passage_text
from provisioning.evaluator_training import Recipe, train_evaluator
from research.evaluator_style_study import DEPTH, JUDGED, KINDS, cached_candidates, judge, study_pairs

BASE = Path(__file__).resolve().parent.parent / "models" / "multilingual-e5-small"
CACHE = bench_settings().data_dir / "study_cache" / "cross_encoder"


def gold_texts(pairs: dict, found: dict) -> dict[str, str]:
    """Article key → the text indexing embeds, for every gold article (from the bench store, cached)."""
    path = CACHE / "gold_texts.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    from benchmarks.indexing import bench_retrieval
    from provisioning.training_pairs import articles_by_key

    store, _ = bench_retrieval(bench_settings())
    by_key = articles_by_key(store)
    texts = {k: passage_text(by_key[k], "") for items in pairs.values() for p in items for k in p.gold if k in by_key}
    store.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    return texts


def training_rows(pairs: dict, found: dict, inside: set[str], golds: dict[str, str], negatives: int,
                  absent_negatives: int) -> dict[str, list]:
    rows: dict[str, list] = {"query": [], "passage": [], "label": []}

    def add(query: str, text: str, label: int) -> None:
        rows["query"].append(query)
        rows["passage"].append(text)
        rows["label"].append(float(label))

    for kind in KINDS:
        absent = kind.startswith("absent")
        for pair, docs in zip(pairs[kind], found[kind], strict=True):
            if pair.qid not in inside:
                continue
            if not absent:
                for key in pair.gold:
                    if key in golds:
                        add(pair.query, golds[key], 1)
            wrong = [d for d in docs if d.meta.get("key") not in pair.gold]
            for doc in wrong[: absent_negatives if absent else negatives]:
                add(pair.query, passage_text(doc, ""), 0)
    order = list(range(len(rows["label"])))
    random.Random(0).shuffle(order)
    return {k: [v[i] for i in order] for k, v in rows.items()}


def train_fold(rows: dict[str, list], out: Path, epochs: float, lr: float, batch: int, max_length: int,
               frozen: int):
    import datasets
    import torch
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    torch.manual_seed(0)
    model = CrossEncoder(str(BASE), num_labels=1, max_length=max_length, local_files_only=True)
    freeze_lower_layers(model.model, frozen)  # the 96M-weight embedding matrix dominates a CPU step otherwise
    args = CrossEncoderTrainingArguments(
        output_dir=str(out / "checkpoints"), num_train_epochs=epochs, per_device_train_batch_size=batch,
        learning_rate=lr, warmup_steps=0.1, save_strategy="no", logging_steps=50, report_to=[], seed=0,
        dataloader_num_workers=0, use_cpu=True)
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_dict(rows),
                                  loss=BinaryCrossEntropyLoss(model))
    trainer.train()
    return model


def fold_scores(fold: int, args: argparse.Namespace, pairs: dict, found: dict, fold_of_qid: dict[str, int],
                golds: dict[str, str]) -> dict:
    path = CACHE / f"fold{fold}_{args.tag}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    inside = {q for q, f in fold_of_qid.items() if f != fold}
    rows = training_rows(pairs, found, inside, golds, args.negatives, args.absent_negatives)
    print(f"fold {fold}: {len(rows['label'])} training pairs ({int(sum(rows['label']))} gold)", flush=True)
    started = time.perf_counter()
    model = train_fold(rows, CACHE / f"fold{fold}", args.epochs, args.lr, args.batch, args.max_length,
                       args.frozen_layers)
    train_s = time.perf_counter() - started
    features = train_evaluator(
        [p for k in ("stard",) for p in pairs[k] if p.qid in inside],
        [d for k in ("stard",) for p, d in zip(pairs[k], found[k], strict=True) if p.qid in inside], Recipe())
    tokenizer = JiebaTokenizer(char_ngrams=())
    result: dict = {"train_s": train_s, "pairs": len(rows["label"]), "kinds": {}}
    latencies = []
    for kind in KINDS:
        rows_out = []
        for pair, docs in zip(pairs[kind], found[kind], strict=True):
            if fold_of_qid[pair.qid] != fold:
                continue
            depth = JUDGED if kind.startswith("absent") else DEPTH
            texts = [passage_text(d, "") for d in docs[:depth]]
            t0 = time.perf_counter()
            logits = [float(v) for v in model.predict([(pair.query, t) for t in texts], activation_fn=None,
                                                      batch_size=32, show_progress_bar=False)]
            if len(texts) >= JUDGED:
                latencies.append((time.perf_counter() - t0) * 1000 * JUDGED / len(texts))
            rows_out.append({"qid": pair.qid, "gold": list(pair.gold), "keys": [d.meta.get("key") for d in docs],
                             "logits": logits, "feature_p": judge(features, tokenizer, pair.query, docs)})
        result["kinds"][kind] = rows_out
    result["ms_per_5"] = statistics.median(latencies)
    path.write_bytes(pickle.dumps(result))
    return result


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def combined(rows: list[dict]) -> list[float]:
    """Out-of-sample probabilities of a logistic on [feature logit, best CE logit], two halves fitted on each
    other."""
    from sklearn.linear_model import LogisticRegression

    x = [[logit(r["feature_p"]), max(r["logits"][:JUDGED])] for r in rows]
    y = [int(any(k in r["gold"] for k in r["keys"][:JUDGED])) for r in rows]
    halves = [list(range(h, len(rows), 2)) for h in (0, 1)]
    out = [0.0] * len(rows)
    for fit_on, apply_to in (halves, halves[::-1]):
        model = LogisticRegression(max_iter=1000).fit([x[i] for i in fit_on], [y[i] for i in fit_on])
        for i, p in zip(apply_to, model.predict_proba([x[i] for i in apply_to])[:, 1], strict=True):
            out[i] = float(p)
    return out


def judged_metrics(probs: list[float], labels: list[int], threshold: float) -> dict[str, float]:
    pos = [p for p, g in zip(probs, labels, strict=True) if g]
    neg = [p for p, g in zip(probs, labels, strict=True) if not g]
    return {"auc": auc(pos, neg) if pos and neg else float("nan"), "ece": expected_calibration_error(probs, labels),
            "pass": statistics.mean(p >= threshold for p in probs)}


def report(results: dict[int, dict], args: argparse.Namespace) -> str:
    lines = ["| judged kind | questions | good share | judge | pass rate | AUC | ECE |",
             "|---|---|---|---|---|---|---|"]
    ranking = ["| kind | order | R@10 | MRR@10 |", "|---|---|---|---|"]
    both = {}
    for fold, res in results.items():  # one combination per fold over all kinds pooled (it must not know the kind)
        pooled = [(kind, r) for kind in KINDS for r in res["kinds"][kind]]
        probs = combined([r for _, r in pooled])
        both[fold] = {kind: [p for (k, _), p in zip(pooled, probs, strict=True) if k == kind] for kind in KINDS}
    for kind in KINDS:
        rows = [r for res in results.values() for r in res["kinds"][kind]]
        labels = [int(any(k in r["gold"] for k in r["keys"][:JUDGED])) for r in rows]
        judges = {"feature evaluator (today)": [r["feature_p"] for r in rows],
                  "cross-encoder (best of 5)": [1 / (1 + math.exp(-max(r["logits"][:JUDGED]))) for r in rows],
                  "both (logistic, out of sample)": [both[fold][kind][i] for fold, res in results.items()
                                                     for i in range(len(res["kinds"][kind]))]}
        for name, probs in judges.items():
            m = judged_metrics(probs, labels, 0.5)
            lines.append(f"| {kind} | {len(rows)} | {statistics.mean(labels):.3f} | {name} | {m['pass']:.3f} | "
                         f"{m['auc']:.3f} | {m['ece']:.3f} |")
        if kind.startswith("absent"):
            continue
        for name, order in (("hybrid", lambda r: r["keys"][:10]),
                            ("cross-encoder reorders top 20", lambda r: [k for _, k in sorted(
                                zip(r["logits"], r["keys"], strict=False), key=lambda t: -t[0])][:10])):
            m = mean_metrics([query_metrics(order(r), r["gold"]) for r in rows])
            ranking.append(f"| {kind} | {name} | {m['R@10']:.3f} | {m['MRR@10']:.3f} |")
    first = next(iter(results.values()))
    return f"""# A cross-encoder from e5-small as the judge (out of fold)

Command: `.venv/bin/python research/cross_encoder_study.py --folds {' '.join(map(str, sorted(results)))} \
--epochs {args.epochs} --lr {args.lr} --negatives {args.negatives} --absent-negatives {args.absent_negatives} \
--frozen-layers {args.frozen_layers}`
Folds reported: {sorted(results)} of 5 (by question id, as `research/evaluator_style_study.py`). Bench store
(zero-shot e5-small), hybrid top {DEPTH}, judged top {JUDGED}. Per fold: {first['pairs']} training pairs, training
{statistics.mean(r['train_s'] for r in results.values()):.0f} s on 2 cores; scoring 5 passages
{statistics.median(r['ms_per_5'] for r in results.values()):.0f} ms (median). Pass at probability 0.5 for the
cross-encoder and the combination; the feature evaluator at 0.5 too (its trained thresholds are near it).

{chr(10).join(lines)}

Reordering the hybrid top 20 by the cross-encoder (gold outside the top 20 stays missed):

{chr(10).join(ranking)}
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--absent-negatives", type=int, default=2)
    parser.add_argument("--frozen-layers", type=int, default=4, help="encoder layers frozen besides the embeddings")
    parser.add_argument("--tag", default="", help="cache tag of a recipe (default: derived from the arguments)")
    parser.add_argument("--out", default="research/reports/cross_encoder_study.md")
    args = parser.parse_args()
    args.tag = args.tag or (f"e{args.epochs}_lr{args.lr}_n{args.negatives}_a{args.absent_negatives}"
                            f"_l{args.max_length}_f{args.frozen_layers}")
    import torch

    torch.set_num_threads(2)
    pairs = study_pairs()
    stard = pairs["stard"]
    assignment = fold_assignment(len(stard))
    fold_of_qid = {p.qid: assignment[i] for i, p in enumerate(stard)}
    found = cached_candidates(pairs)
    golds = gold_texts(pairs, found)
    results = {}
    for fold in args.folds:
        results[fold] = fold_scores(fold, args, pairs, found, fold_of_qid, golds)
        Path(args.out).write_text(report(results, args), encoding="utf-8")
        print(Path(args.out).read_text(encoding="utf-8"), flush=True)


if __name__ == "__main__":
    main()
