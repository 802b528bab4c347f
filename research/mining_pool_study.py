"""Mining study (issue 29): hard negatives from BM25's candidates re-ranked by the base embedder, against the former
recipe's hybrid retrieval over the whole corpus embedded by the base model.

For the questions the shipped embedder trains on (STARD train less the evaluator's 20 %), each pool size's mined
candidates (`provisioning.mining.mine_candidates`) are compared with the former recipe's: the equal-weight hybrid
retrieval through the base store (built by `benchmarks/indexing.py` or `benchmarks/retrieval.py`). Reported per
pool: the articles the base model must encode, the seconds, and how often the hard negative (the best-ranked
non-gold candidate, what `training_rows` takes) is the same article. Whether the embedder trained on them is as
good is measured out of fold by `benchmarks/retrieval.py` (report in `benchmarks/reports/setup.md`).

    .venv/bin/python research/mining_pool_study.py [--pools 10,20,30,50,100] \\
        [--out research/reports/mining_pool_study.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.indexing import bench_settings
from pipelines.indexing import law_sources
from pipelines.retrieval import build_retrieval_pipeline, retrieve
from pipelines.stores import open_document_store
from provisioning.evaluator_training import Recipe
from provisioning.mining import MINING_DEPTH, bm25_pools, corpus_articles, mine_candidates
from provisioning.train import CALIBRATION_SHARE, split_pairs
from provisioning.training_pairs import DEFAULT_PAIRS, Pair, load_pairs


def cpu_name() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.machine())


def negative(pair: Pair, candidates: list) -> str | None:
    return next((d.meta["key"] for d in candidates if d.meta["key"] not in pair.gold), None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pools", default="10,20,30,50,100")
    parser.add_argument("--out", default="research/reports/mining_pool_study.md")
    args = parser.parse_args()
    settings = bench_settings()
    pairs, _ = split_pairs(load_pairs(DEFAULT_PAIRS), CALIBRATION_SHARE, Recipe().seed)
    store = open_document_store(settings)
    if store.count_documents() < 20_000:
        raise SystemExit("the base corpus store is not built: run benchmarks/indexing.py first")
    pipeline = build_retrieval_pipeline(store, dataclasses.replace(settings, bm25_weight=1.0), top_k=MINING_DEPTH)
    pipeline.warm_up()
    started = time.perf_counter()
    former = [negative(p, retrieve(pipeline, [p.query], top_k=MINING_DEPTH)) for p in pairs]
    former_seconds = time.perf_counter() - started
    store.close()
    articles = corpus_articles(law_sources(["all"]))
    sizes = [int(p) for p in args.pools.split(",")]
    deepest = bm25_pools([p.query for p in pairs], articles, settings, max(sizes))  # a smaller pool is a prefix
    lines = []
    for pool in sizes:
        started = time.perf_counter()
        mined = mine_candidates(pairs, articles, settings, pool=pool)
        seconds = time.perf_counter() - started
        encoded = len({i for ranked in deepest for i in ranked[:pool]})
        negatives = [negative(p, c) for p, c in zip(pairs, mined, strict=True)]
        same = sum(a == b for a, b in zip(negatives, former, strict=True) if b is not None)
        lines.append(f"| BM25 top {pool}, base model on those | {encoded:,} | "
                     f"{seconds:.0f} | {same / sum(b is not None for b in former):.3f} | "
                     f"{sum(n is None for n in negatives)} |")
        print(lines[-1], flush=True)
    report = f"""# Mining hard negatives without a dense index of the corpus

Command: `.venv/bin/python research/mining_pool_study.py {' '.join(sys.argv[1:])}`
Machine: {os.cpu_count()} cores, {cpu_name()}, Python {platform.python_version()}.
Questions: the {len(pairs)} STARD train questions the shipped embedder trains on; corpus: {len(articles):,} articles.
The former recipe: equal-weight hybrid retrieval (BM25 top 100 + dense top 100 over the base store, RRF) for
{len(pairs)} questions took {former_seconds:.0f} s, after the whole corpus was embedded by the base model. A
question's hard negative is its best-ranked non-gold candidate of the fused top {MINING_DEPTH}.

| mining | articles the base model encodes | seconds (BM25 + encoding + ranking) | \
same hard negative as the former recipe | questions without one |
|---|---|---|---|---|
| former: the whole corpus embedded | {len(articles):,} | (the corpus index) | 1.000 | \
{sum(b is None for b in former)} |
{chr(10).join(lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
