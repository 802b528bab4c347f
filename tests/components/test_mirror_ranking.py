"""The mirror's top-k under a filter (every search has one since statute versions): it must rank exactly as a full
stable sort does, ties included, whether the filter lets through few candidates or most."""

import numpy as np
import pytest
from haystack import Document

from document_store.collection_mirror import _top


def full_sort(scores, documents, top_k, accept):
    order = sorted(range(len(documents)), key=lambda i: -scores[i])  # Python's sort is stable
    return [(documents[i], float(scores[i])) for i in order if accept is None or accept(documents[i])][:top_k]


@pytest.mark.parametrize("share", [0.0, 0.05, 0.9, 0.999])
@pytest.mark.parametrize("top_k", [1, 10, 100])
def test_filtered_top_k_equals_a_full_stable_sort(share, top_k):
    rng = np.random.default_rng(top_k)
    documents = [Document(content=str(i), meta={"in_force": bool(rng.random() >= share)}) for i in range(5000)]
    scores = np.round(rng.random(5000), 2).astype(np.float32)  # coarse scores: many ties
    accept = lambda doc: doc.meta["in_force"]
    for keep in (accept, None):
        got = _top(scores, np.arange(5000), documents, top_k, keep)
        assert [(d.content, s) for d, s in got] == [(d.content, s) for d, s in full_sort(scores, documents, top_k,
                                                                                          keep)]
