"""The two sides of BM25 as sparse vectors, shared by indexing, both stores' search and the studies.

Document side: ``tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`` per term (stored in Qdrant). Query side: each
term's count in the query. The store's IDF modifier supplies ``idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))``,
so ``Σ idf · query · document`` is Lucene's BM25. `BM25Matrix` scores a query against many documents' weights
at once, with the IDF computed as the store computes it (hard-negative mining uses it; so did the research studies).

Usage::

    from collections import Counter
    from helpers.text_encoding.sparse_terms import bm25_vector, query_vector
    doc = bm25_vector(Counter({7: 2, 9: 1}), avgdl=40.0, k1=1.2, b=0.75)
    query = query_vector(["个人信息", "同意", "同意"])
    scores = BM25Matrix([doc, None]).scores(["个人信息", "同意"])    # one score per document
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from haystack.dataclasses import SparseEmbedding
from scipy import sparse

from helpers.text_encoding.jieba_tokenizer import term_id


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


class SparseVector(Protocol):
    """A Haystack `SparseEmbedding` or a Qdrant sparse vector."""

    indices: list[int]
    values: list[float]


class BM25Matrix:
    """The BM25 weights of a list of documents (documents × terms) and the IDF of Qdrant's modifier over the
    documents that have terms, so `scores` equals the store's sparse search score for every document.

    :param vectors: each document's document-side weights (`bm25_vector`), ``None`` for a document without terms.
    """

    def __init__(self, vectors: Sequence[SparseVector | None]) -> None:
        rows, cols, values = [], [], []
        self.columns: dict[int, int] = {}
        with_vector = 0  # Qdrant's IDF counts the points that have the sparse vector
        for row, vector in enumerate(vectors):
            if vector is None:
                continue
            with_vector += 1
            for index, value in zip(vector.indices, vector.values, strict=True):
                rows.append(row)
                cols.append(self.columns.setdefault(index, len(self.columns)))
                values.append(value)
        self.weights = sparse.csc_matrix((np.asarray(values, dtype=np.float32), (rows, cols)),
                                         shape=(len(vectors), len(self.columns)))
        df = np.diff(self.weights.indptr)
        self.idf = np.log1p((with_vector - df + 0.5) / (df + 0.5)).astype(np.float32)

    def scores(self, terms: list[str]) -> np.ndarray:
        """Each document's BM25 score for the query ``terms`` (zeros where no term matches)."""
        vector = query_vector(terms)
        pairs = [(self.columns[i], v) for i, v in zip(vector.indices, vector.values, strict=True)
                 if i in self.columns] if vector else []
        if not pairs:
            return np.zeros(self.weights.shape[0], dtype=np.float32)
        cols = [c for c, _ in pairs]
        query = self.idf[cols] * np.asarray([v for _, v in pairs], dtype=np.float32)
        return np.asarray(self.weights[:, cols] @ query).ravel()
