"""Issue 29: hard negatives mined without a dense index of the corpus (BM25 over every article, the base embedder on
BM25's candidates only), ranked as the product's own BM25 and hybrid retrieval rank."""

import dataclasses
import math
from collections import Counter

import pytest

from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from helpers.text_encoding.jieba_tokenizer import term_id
from helpers.text_encoding.sparse_terms import BM25Matrix, bm25_vector
from pipelines.indexing import Indexer, law_sources
from pipelines.retrieval import build_retrieval_pipeline, retrieve
from pipelines.stores import open_document_store
from provisioning.mining import bm25_pools, corpus_articles, mine_candidates
from provisioning.training_pairs import Pair, articles_by_key

PIPL = "中华人民共和国个人信息保护法"
QUESTIONS = ["公司收集我的个人信息需要我同意吗", "个人信息可以提供给境外吗", "敏感个人信息包括哪些",
             "未成年人的个人信息怎么处理", "删除个人信息的权利", "违反个人信息保护法要罚款多少"]


def test_bm25_matrix_scores_are_lucenes_bm25_with_qdrants_idf():
    a, b = term_id("同意"), term_id("个人")
    docs = [bm25_vector(Counter({a: 2, b: 1}), avgdl=2.0, k1=1.2, b=0.75),
            bm25_vector(Counter({b: 3}), avgdl=2.0, k1=1.2, b=0.75), None]
    scores = BM25Matrix(docs).scores(["同意", "同意", "个人", "无关"])
    idf = {t: math.log1p((2 - df + 0.5) / (df + 0.5)) for t, df in ((a, 1), (b, 2))}  # two documents have terms

    def lucene(tf: int, dl: int) -> float:
        return tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / 2.0))

    assert scores[0] == pytest.approx(2 * idf[a] * lucene(2, 3) + idf[b] * lucene(1, 3), rel=1e-5)
    assert scores[1] == pytest.approx(idf[b] * lucene(3, 3), rel=1e-5)
    assert scores[2] == 0.0
    assert not BM25Matrix(docs).scores(["无关"]).any() and BM25Matrix([]).scores(["同意"]).size == 0


@pytest.fixture
def pipl_store(settings):
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources([PIPL]), progress=False)
    yield store
    store.close()


def test_bm25_candidates_are_the_bm25_retrievers_ranking_without_a_store(settings, pipl_store):
    articles = corpus_articles(law_sources([PIPL]))
    assert sorted(d.meta["key"] for d in articles) == sorted(articles_by_key(pipl_store))
    retriever = JiebaBM25Retriever(document_store=pipl_store, top_k=8)
    pools = bm25_pools(QUESTIONS, articles, settings, pool=8)
    for question, pool in zip(QUESTIONS, pools, strict=True):
        expected = retriever.run(queries=[question])["documents"]
        assert [articles[i].meta["key"] for i in pool] == [d.meta["key"] for d in expected], question


def test_with_a_pool_as_large_as_the_corpus_mining_ranks_as_the_hybrid_retrieval(settings, pipl_store):
    """Restricted to BM25's candidates, the base embedder's ranking fuses as the whole hybrid retrieval does at equal
    weights: with a pool that holds every matching article, the candidates are the same, in the same order."""
    articles = corpus_articles(law_sources([PIPL]))
    pairs = [Pair(q, (f"{PIPL}第十三条",)) for q in QUESTIONS]
    mined = mine_candidates(pairs, articles, settings, pool=len(articles), depth=10)
    pipeline = build_retrieval_pipeline(pipl_store, dataclasses.replace(settings, bm25_weight=1.0), top_k=10)
    pipeline.warm_up()
    for question, candidates in zip(QUESTIONS, mined, strict=True):
        assert len(candidates) == 10
        hybrid = retrieve(pipeline, [question], top_k=10)
        assert [d.meta["key"] for d in candidates] == [d.meta["key"] for d in hybrid], question
    small = mine_candidates(pairs, articles, settings, pool=3, depth=10)
    pools = bm25_pools(QUESTIONS, articles, settings, pool=3)
    for candidates, pool in zip(small, pools, strict=True):  # a small pool: only BM25's candidates, reordered
        assert sorted(d.meta["key"] for d in candidates) == sorted(articles[i].meta["key"] for i in pool)
    with pytest.raises(ValueError, match="pool and depth"):
        mine_candidates(pairs, articles, settings, pool=0)
