"""What a learned reranker reads about each article of a fused candidate pool: the question against the article, and
the article's place among the others (the paths that found it, its law's weight in the pool, its distance to the
best hits of the same law).

The pool signals were added because the gold that round 1 misses is most often just below the cut or next to a top
hit of the right law (`research/reports/round2_paths_study.md`). Out of fold they moved MRR@10 a little and R@10 not
at all (`research/reports/pair_rerank_study.md`), so no product component uses them.

Usage::

    from research.pool_features import POOL_FEATURES, pool_features
    rows = pool_features("公司收集我的个人信息需要我同意吗", fused_docs)   # one row per document, POOL_FEATURES order
"""

from __future__ import annotations

import math
import re
from collections import Counter

from haystack import Document

from helpers.statutes.labels import LAW_NAME_PREFIX
from helpers.statutes.numerals import cn_to_int

POOL_FEATURES = (
    "log_position", "fused_share", "log_bm25_rank", "log_dense_rank", "dense_cosine", "bm25_share",
    "bigram_share", "law_bigram_share", "law_top10", "law_top30", "law_best_position", "law_mass",
    "neighbour_distance", "log_length",
)
MISSING_RANK = 200  # a path that did not return the article (paths return their top 100)
MISSING_COSINE = 0.7  # below the cosines e5 gives its top 100
FAR = 50  # article distance of an article with no top-3 hit of its law
_NUMBER = re.compile(r"第([零〇一二三四五六七八九十百千万]+)条")
_CJK = re.compile(r"[\u4e00-\u9fff]+")


def bigrams(text: str) -> set[str]:
    """The Chinese character bigrams of ``text`` (runs of Han characters only)."""
    return {run[i:i + 2] for run in _CJK.findall(text) for i in range(len(run) - 1)}


def article_number(doc: Document) -> int | None:
    match = _NUMBER.search(str(doc.meta.get("article_no") or ""))
    return cn_to_int(match.group(1)) if match else None


def short_law(law: str) -> str:
    return law.removeprefix(LAW_NAME_PREFIX)


def _path_hits(doc: Document) -> tuple[dict[str, int], dict[str, float]]:
    hits = doc.meta.get("retrieval", {}).get("hits", [])
    ranks = {p: min((h["rank"] for h in hits if h["path"] == p), default=MISSING_RANK) for p in ("bm25", "dense")}
    scores = {p: max((float(h["score"]) for h in hits if h["path"] == p and h.get("score") is not None),
                     default=0.0) for p in ("bm25", "dense")}
    return ranks, scores


def pool_features(query: str, documents: list[Document]) -> list[list[float]]:
    """One row of `POOL_FEATURES` per document, in the pool's order (its fused order is a signal)."""
    if not documents:
        return []
    query_grams = bigrams(query)
    paths = [_path_hits(doc) for doc in documents]
    best_fused = max((doc.score or 0.0) for doc in documents) or 1.0
    best_bm25 = max(scores["bm25"] for _, scores in paths) or 1.0
    laws = [str(doc.meta.get("law") or "") for doc in documents]
    top10, top30 = Counter(laws[:10]), Counter(laws[:30])
    mass: Counter[str] = Counter()
    for law, doc in zip(laws[:30], documents[:30], strict=False):
        mass[law] += doc.score or 0.0
    total_mass = sum(mass.values()) or 1.0
    first_position: dict[str, int] = {}
    for i, law in enumerate(laws):
        first_position.setdefault(law, i)
    numbers = [article_number(doc) for doc in documents]
    anchors: dict[str, list[int]] = {}
    for law, number in zip(laws[:3], numbers[:3], strict=False):
        if number is not None:
            anchors.setdefault(law, []).append(number)
    law_grams = {law: bigrams(short_law(law)) for law in set(laws)}
    rows = []
    for i, (doc, (ranks, scores), law, number) in enumerate(zip(documents, paths, laws, numbers, strict=True)):
        text = f"{law}{doc.content or ''}"
        grams = law_grams[law]
        near = [abs(number - a) for a in anchors.get(law, []) if i >= 3 or a != number] if number is not None else []
        rows.append([
            math.log(i + 1), (doc.score or 0.0) / best_fused, math.log(ranks["bm25"]), math.log(ranks["dense"]),
            scores["dense"] or MISSING_COSINE, scores["bm25"] / best_bm25,
            sum(g in text for g in query_grams) / len(query_grams) if query_grams else 0.0,
            len(grams & query_grams) / len(grams) if grams else 0.0,
            float(top10[law]), float(top30[law]), math.log(first_position[law] + 1), mass[law] / total_mass,
            math.log1p(min(near, default=FAR)), math.log(len(doc.content or "") + 1),
        ])
    return rows
