"""JiebaBM25Retriever on the two-law fixture store: its rankings, a query with no terms, ``top_k`` and filters at
build time and per run, and the tokenizer settings it searches with. Recall on both engines, character n-grams,
Lucene's scores and serialisation are in test_retrieval_paths.py."""

import pytest
from haystack import Document

from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from config.settings import Settings
from pipelines.stores import open_document_store

LAW_A = "示例信息保护法"
LAW_B = "示例交通法"
ONLY_A = {"field": "meta.law", "operator": "==", "value": LAW_A}
ONLY_B = {"field": "meta.law", "operator": "==", "value": LAW_B}


def keys(docs: list[Document]) -> list[str]:
    return [d.meta["key"] for d in docs]


@pytest.fixture
def empty_store(settings: Settings):
    """A store with nothing in it, for what needs no articles."""
    store = open_document_store(settings)
    yield store
    store.close()


def test_bad_settings_are_refused(empty_store) -> None:
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        JiebaBM25Retriever(document_store=empty_store, top_k=0)
    with pytest.raises(ValueError, match="mode must be one of"):
        JiebaBM25Retriever(document_store=empty_store, mode="full")
    with pytest.raises(ValueError, match="char_ngrams must be positive integers"):
        JiebaBM25Retriever(document_store=empty_store, char_ngrams=[0])


def test_rankings_are_per_query_scored_and_best_first(fixture_store) -> None:
    out = JiebaBM25Retriever(document_store=fixture_store, top_k=5).run(queries=["个人信息同意", "交通信号"])
    first, second = out["rankings"]
    assert (first.path, first.query, second.path, second.query) == ("bm25", "个人信息同意", "bm25", "交通信号")
    scores = [d.score for d in first.documents]
    assert all(s is not None and s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    assert {d.meta["law"] for d in first.documents} == {LAW_A}
    assert keys(second.documents)[0] == f"{LAW_B}第二条"


def test_a_query_with_no_terms_finds_nothing(fixture_store) -> None:
    """Punctuation and stopwords make no terms: no search is sent, the ranking is empty."""
    out = JiebaBM25Retriever(document_store=fixture_store).run(queries=["？！，。", "第二条"])
    assert out["rankings"][0].documents == [] and out["documents"] == []
    assert out["rankings"][1].documents  # the next query is still searched


def test_a_run_top_k_overrides_the_built_one(fixture_store) -> None:
    retriever = JiebaBM25Retriever(document_store=fixture_store, top_k=1)
    assert len(retriever.run(queries=["个人信息"])["documents"]) == 1
    assert len(retriever.run(queries=["个人信息"], top_k=3)["documents"]) == 3


def test_the_built_filters_apply_until_a_run_gives_its_own(fixture_store) -> None:
    """A run's filters replace the built ones; they are not combined."""
    retriever = JiebaBM25Retriever(document_store=fixture_store, top_k=10, filters=ONLY_B)
    assert {d.meta["law"] for d in retriever.run(queries=["应当"])["documents"]} == {LAW_B}
    assert {d.meta["law"] for d in retriever.run(queries=["应当"], filters=ONLY_A)["documents"]} == {LAW_A}


def test_no_queries_give_no_rankings(empty_store) -> None:
    assert JiebaBM25Retriever(document_store=empty_store).run(queries=[]) == {"documents": [], "rankings": []}


def test_the_tokenizer_follows_the_retrievers_settings(empty_store) -> None:
    """The query must be cut as the documents were: the n-gram sizes and the mode given are the ones used."""
    default = JiebaBM25Retriever(document_store=empty_store).tokenize("撤回同意")
    assert {"#撤", "#同意"} <= set(default)
    bigrams = JiebaBM25Retriever(document_store=empty_store, char_ngrams=[2]).tokenize("撤回同意")
    assert "#同意" in bigrams and "#撤" not in bigrams
    assert all(not t.startswith("#") for t in JiebaBM25Retriever(document_store=empty_store,
                                                                  char_ngrams=[]).tokenize("撤回同意"))
    search = JiebaBM25Retriever(document_store=empty_store, char_ngrams=[]).tokenize("个人信息保护法")
    accurate = JiebaBM25Retriever(document_store=empty_store, char_ngrams=[], mode="accurate").tokenize(
        "个人信息保护法")
    assert set(accurate) < set(search)  # search mode adds the sub-words
