"""Does a late-interaction (token-level MaxSim) score of e5-small's token embeddings reorder the hybrid pool better
than the fused order (issue 47, item 1: the CPU recipe "a late-interaction scorer on the embedder's tokens")?

No training: the base e5-small (the bench store's zero-shot embedder) encodes the question ("query: ") and each
pooled article ("passage: ", the text indexing embeds) token by token; an article's score is the mean over the
question's tokens of the best cosine with one of its tokens (ColBERT's MaxSim, special tokens left out). Each of the
891 STARD train questions' hybrid top ``--depth`` (`research/pair_rerank_study.py`'s cache) is reordered by it,
alone and fused with the hybrid order by RRF (k = 60, equal weights). Nothing is fitted, so every row is out of
sample. Also timed: encoding ``--depth`` articles on the fly, and scoring them from stored token vectors.

    .venv/bin/python research/maxsim_study.py [--depth 50] [--sample 0] [--out research/reports/maxsim_study.md]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from benchmarks.indexing import bench_settings
from benchmarks.metrics import mean_metrics, query_metrics
from research.embedder_probe import load_sentence_transformer, passage
from research.pair_rerank_study import cached_pools, rows


def token_vectors(model, texts: list[str], batch_size: int = 32) -> list[np.ndarray]:
    """Each text's token embeddings without its first and last (special) tokens, L2-normalised, float32."""
    out = model.encode(texts, output_value="token_embeddings", batch_size=batch_size, show_progress_bar=False,
                       convert_to_numpy=False)
    vectors = []
    for tokens in out:
        array = tokens.float().numpy()[1:-1]
        vectors.append(array / np.maximum(np.linalg.norm(array, axis=1, keepdims=True), 1e-9))
    return vectors


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    return float((query @ doc.T).max(axis=1).mean())


def fused_order(scores: list[float]) -> list[int]:
    """RRF of the hybrid order (the pool's own) and the MaxSim order, k = 60, equal weights."""
    rank = {j: r for r, j in enumerate(sorted(range(len(scores)), key=lambda j: -scores[j]), start=1)}
    return sorted(range(len(scores)), key=lambda j: -(1 / (60 + j + 1) + 1 / (60 + rank[j])))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--sample", type=int, default=0, help="questions (random, seed 0); 0 = all")
    parser.add_argument("--out", default="research/reports/maxsim_study.md")
    args = parser.parse_args()
    pools = cached_pools(args.depth)
    ids = sorted(random.Random(0).sample(range(len(pools)), args.sample)) if args.sample else list(range(len(pools)))
    model = load_sentence_transformer(bench_settings())
    model.max_seq_length = 512

    started = time.perf_counter()
    docs = {d.meta["key"]: d for i in ids for d in pools[i]["docs"][:args.depth]}
    keys = list(docs)
    doc_vectors = dict(zip(keys, token_vectors(model, [passage(docs[k], "passage: ") for k in keys]), strict=True))
    encode_seconds = time.perf_counter() - started
    query_vectors = token_vectors(model, [f"query: {pools[i]['query']}" for i in ids])
    print(f"{len(keys)} articles and {len(ids)} questions encoded in {time.perf_counter() - started:.0f} s", flush=True)

    scoring = []
    hybrid, alone, fused = {}, {}, {}
    for i, query in zip(ids, query_vectors, strict=True):
        pool = pools[i]["docs"][:args.depth]
        t = time.perf_counter()
        scores = [maxsim(query, doc_vectors[d.meta["key"]]) for d in pool]
        scoring.append(time.perf_counter() - t)
        hybrid[i] = [d.meta["key"] for d in pools[i]["docs"]]
        alone[i] = [pool[j].meta["key"] for j in sorted(range(len(pool)), key=lambda j: -scores[j])]
        fused[i] = [pool[j].meta["key"] for j in fused_order(scores)]

    on_the_fly = []
    for i in random.Random(1).sample(ids, min(20, len(ids))):
        t = time.perf_counter()
        token_vectors(model, [passage(d, "passage: ") for d in pools[i]["docs"][:args.depth]], batch_size=args.depth)
        on_the_fly.append(time.perf_counter() - t)
    tokens = [len(v) for v in doc_vectors.values()]

    table = (rows("hybrid RRF (the pool's order)", hybrid, pools) + rows("MaxSim alone", alone, pools)
             + rows("RRF(hybrid, MaxSim)", fused, pools))
    overall = {name: mean_metrics([query_metrics(r[i], pools[i]["gold"]) for i in ids])
               for name, r in (("hybrid", hybrid), ("MaxSim", alone), ("fused", fused))}
    header = ("| order | questions | n | R@1 | R@5 | R@10 | R@20 | MRR@10 | nDCG@10 | R@10 / pool |\n"
              "|---|---|---|---|---|---|---|---|---|---|")
    report = f"""# Late interaction (token MaxSim over zero-shot e5-small) reranking the hybrid pool

Command: `.venv/bin/python research/maxsim_study.py --depth {args.depth}\
{f' --sample {args.sample}' if args.sample else ''}`
Bench store (zero-shot e5-small, all 23,995 articles), hybrid RRF top {args.depth} of {len(ids)} STARD train
questions (`research/pair_rerank_study.py`'s pools). Nothing is trained, so every row is out of sample.
Machine: AMD EPYC with AVX-512 VNNI, 2 cores, torch on CPU (fp32).

{header}
{chr(10).join(table)}

All questions: R@10 {overall['hybrid']['R@10']:.3f} (hybrid) → {overall['MaxSim']['R@10']:.3f} (MaxSim alone) →
{overall['fused']['R@10']:.3f} (fused); MRR@10 {overall['hybrid']['MRR@10']:.3f} → {overall['MaxSim']['MRR@10']:.3f} →
{overall['fused']['MRR@10']:.3f}.

Cost on 2 cores:

- encoding {args.depth} pooled articles at query time: median {statistics.median(on_the_fly) * 1000:.0f} ms
  (20 questions; the issue's budget for the pair model: 250 ms p50);
- scoring {args.depth} articles from stored token vectors: median {statistics.median(scoring) * 1000:.1f} ms;
- storing token vectors instead: {statistics.mean(tokens):.0f} tokens per article on average, so
  {statistics.mean(tokens) * 23995 * 384 * 2 / 2**30:.1f} GiB in float16 for the 23,995 articles (the store's
  dense vectors: {23995 * 384 * 4 / 2**20:.0f} MiB);
- this run: {len(keys)} articles encoded in {encode_seconds:.0f} s.
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
