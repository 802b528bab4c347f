"""`helpers.text_encoding.sparse_terms`: the document and query sides of BM25 as sparse vectors (their scores against
Lucene's formula and Qdrant's IDF are in provisioning/test_mining.py and components/retrievers/)."""

from collections import Counter

import numpy as np
import pytest

from helpers.text_encoding.jieba_tokenizer import term_id
from helpers.text_encoding.sparse_terms import BM25Matrix, bm25_vector, query_vector

K1, B = 1.2, 0.75


def weight(counts: Counter[int], term: int, avgdl: float = 10.0, k1: float = K1, b: float = B) -> float:
    vector = bm25_vector(counts, avgdl=avgdl, k1=k1, b=b)
    assert vector is not None
    return dict(zip(vector.indices, vector.values, strict=True))[term]


def test_a_document_without_terms_has_no_vector() -> None:
    assert bm25_vector(Counter(), avgdl=10.0, k1=K1, b=B) is None
    assert query_vector([]) is None


def test_document_weights_are_sorted_by_term_and_positive() -> None:
    vector = bm25_vector(Counter({9: 1, 3: 2, 7: 5}), avgdl=8.0, k1=K1, b=B)
    assert vector is not None and vector.indices == [3, 7, 9]
    assert all(value > 0 for value in vector.values)
    assert vector.values[1] > vector.values[0] > vector.values[2]  # more occurrences, more weight (same document)


def test_a_terms_weight_saturates_below_k1_plus_one() -> None:
    weights = [weight(Counter({1: tf}), 1, avgdl=float(tf)) for tf in (1, 2, 10, 1000)]
    assert weights == sorted(weights) and 0 < K1 + 1 - weights[-1] < 0.01  # tends to k1 + 1, never reaches it
    assert weight(Counter({1: 1}), 1, avgdl=1.0) == pytest.approx(1.0)  # one term in an average document


def test_a_longer_document_weighs_a_term_less_unless_b_is_zero() -> None:
    short, long = Counter({1: 2, 2: 3}), Counter({1: 2, 2: 30})
    assert weight(short, 1) > weight(long, 1)
    assert weight(short, 1, b=0.0) == pytest.approx(weight(long, 1, b=0.0))


def test_the_query_side_counts_each_distinct_term() -> None:
    vector = query_vector(["同意", "个人", "同意", "同意"])
    assert vector is not None
    assert dict(zip(vector.indices, vector.values, strict=True)) == {term_id("同意"): 3.0, term_id("个人"): 1.0}
    assert vector.indices == sorted(vector.indices)


def test_the_matrix_scores_zero_for_documents_without_a_vector_and_ranks_matches() -> None:
    a, b = term_id("撤回"), term_id("同意")
    docs = [None, bm25_vector(Counter({a: 1, b: 1}), avgdl=2.0, k1=K1, b=B),
            bm25_vector(Counter({b: 1, term_id("其他"): 1}), avgdl=2.0, k1=K1, b=B)]
    scores = BM25Matrix(docs).scores(["撤回", "同意"])
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert scores[0] == 0.0 and scores[1] > scores[2] > 0.0  # the rarer term counts for more
    assert BM25Matrix(docs).scores([]).tolist() == [0.0, 0.0, 0.0]


def test_a_term_every_document_has_still_scores_above_zero() -> None:
    """Qdrant's IDF is ln(1 + (N − df + 0.5)/(df + 0.5)): positive even at df = N (Lucene's, not the classic one)."""
    term = term_id("法")
    docs = [bm25_vector(Counter({term: 1}), avgdl=1.0, k1=K1, b=B) for _ in range(3)]
    assert (BM25Matrix(docs).scores(["法"]) > 0).all()


def test_the_matrix_reads_qdrants_sparse_vectors_too() -> None:
    """Anything with ``indices`` and ``values`` (a Qdrant `SparseVector` read back from the store) is a row."""
    from qdrant_client.models import SparseVector

    counts = Counter({term_id("同意"): 2})
    ours = bm25_vector(counts, avgdl=2.0, k1=K1, b=B)
    assert ours is not None
    theirs = SparseVector(indices=ours.indices, values=ours.values)
    assert BM25Matrix([theirs]).scores(["同意"]).tolist() == BM25Matrix([ours]).scores(["同意"]).tolist()
