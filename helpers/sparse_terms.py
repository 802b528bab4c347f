"""The two sides of BM25 as sparse vectors, shared by indexing, the in-process mirror and Qdrant search.

Document side: ``tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`` per term (stored in Qdrant). Query side: each
term's count in the query. The store's IDF modifier supplies ``idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))``,
so ``Σ idf · query · document`` is Lucene's BM25.

Usage::

    from collections import Counter
    from helpers.sparse_terms import bm25_vector, query_vector
    doc = bm25_vector(Counter({7: 2, 9: 1}), avgdl=40.0, k1=1.2, b=0.75)
    query = query_vector(["个人信息", "同意", "同意"])
"""

from __future__ import annotations

from collections import Counter

from haystack.dataclasses import SparseEmbedding

from helpers.jieba_tokenizer import term_id


def bm25_vector(counts: Counter[int], avgdl: float, k1: float, b: float) -> SparseEmbedding | None:
    """The document-side BM25 weights of a document's term counts (``None`` when it has no terms)."""
    if not counts:
        return None
    norm = k1 * (1 - b + b * sum(counts.values()) / avgdl)
    indices = sorted(counts)
    return SparseEmbedding(indices=indices, values=[counts[i] * (k1 + 1) / (counts[i] + norm) for i in indices])


def query_vector(terms: list[str]) -> SparseEmbedding | None:
    """The query side: each distinct term id with its count (``None`` when there are no terms)."""
    counts = Counter(term_id(t) for t in terms)
    if not counts:
        return None
    indices = sorted(counts)
    return SparseEmbedding(indices=indices, values=[float(counts[i]) for i in indices])
