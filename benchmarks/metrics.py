"""Retrieval metrics as defined in shared/data/stard/README.md (per query, then the unweighted mean).

Usage::

    from benchmarks.metrics import query_metrics, mean_metrics
    rows = [query_metrics(ranked_keys, gold_keys) for ranked_keys, gold_keys in results]
    summary = mean_metrics(rows)   # {"R@10": ..., "MRR@10": ..., ...}
"""

from __future__ import annotations

import json
import math
from pathlib import Path

KS = (1, 3, 5, 10, 20, 100)
RRF_K = 60
HIT_KS = (1, 3, 10)


def query_metrics(ranked: list[str], gold: list[str]) -> dict[str, float]:
    """Recall@k, Hit@k, MRR@10 and binary nDCG@10 of one ranked key list against a gold set."""
    gold_set = set(gold)
    unique = list(dict.fromkeys(ranked))
    metrics = {f"R@{k}": len(set(unique[:k]) & gold_set) / len(gold_set) for k in KS}
    metrics.update({f"Hit@{k}": float(bool(set(unique[:k]) & gold_set)) for k in HIT_KS})
    first = next((i for i, key in enumerate(unique[:10], start=1) if key in gold_set), None)
    metrics["MRR@10"] = 1.0 / first if first else 0.0
    dcg = sum(1.0 / math.log2(i + 1) for i, key in enumerate(unique[:10], start=1) if key in gold_set)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold_set), 10) + 1))
    metrics["nDCG@10"] = dcg / idcg
    return metrics


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    return {name: sum(row[name] for row in rows) / len(rows) for name in rows[0]} if rows else {}


def load_queries(path: str | Path) -> list[dict]:
    """JSONL with ``{"qid", "query", "gold": [keys]}`` per line."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def rrf(*orders: list[str]) -> list[str]:
    """Reciprocal rank fusion (k = `RRF_K`) of ranked key lists, as the product's joiners fuse: the fused order."""
    fused: dict[str, float] = {}
    for order in orders:
        for rank, key in enumerate(order, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(fused, key=lambda k: -fused[k])
