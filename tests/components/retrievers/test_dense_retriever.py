"""DenseRetriever on the two-law fixture store: its rankings, ``top_k`` and filters at build time and per run, the
embedder it is given, and loading one built with another embedder. The nearest article, filters on every path and
the ONNX embedder's round trip are in test_retrieval_paths.py."""

import copy

import pytest
from haystack import Document, component
from haystack.components.embedders import OpenAITextEmbedder
from haystack.utils import Secret

from components.retrievers.dense_retriever import DenseRetriever
from config.settings import Settings
from pipelines.embedders import text_embedder
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


@component
class FixedEmbedder:
    """An embedder that gives every text the same vector and counts the texts it was asked for."""

    def __init__(self, vector: list[float]) -> None:
        self.vector, self.texts = vector, []

    def warm_up(self) -> None:
        pass

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict:
        self.texts.append(text)
        return {"embedding": self.vector}


def stored_vector(store, key: str) -> list[float]:
    store.return_embedding = True
    try:
        doc, = store.filter_documents({"field": "meta.key", "operator": "==", "value": key})
    finally:
        store.return_embedding = False
    return doc.embedding


def test_top_k_below_one_is_refused(empty_store) -> None:
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        DenseRetriever(document_store=empty_store, embedder=FixedEmbedder([0.0]), top_k=0)


def test_the_embedders_vector_is_what_is_searched(fixture_store) -> None:
    """Any component whose run(text) gives an embedding will do: an article's own vector finds that article first,
    with a cosine of 1."""
    embedder = FixedEmbedder(stored_vector(fixture_store, f"{LAW_A}第三条"))
    out = DenseRetriever(document_store=fixture_store, embedder=embedder, top_k=3).run(queries=["任意的问题"])
    assert keys(out["documents"])[0] == f"{LAW_A}第三条"
    assert out["documents"][0].score == pytest.approx(1.0, abs=1e-4)
    assert embedder.texts == ["任意的问题"]


def test_one_ranking_per_query_best_first(fixture_store, settings: Settings) -> None:
    retriever = DenseRetriever(document_store=fixture_store, embedder=text_embedder(settings), top_k=3)
    retriever.warm_up()
    out = retriever.run(queries=["汽车可以随便停吗", "我可以撤回同意吗"])
    first, second = out["rankings"]
    assert (first.path, first.query, second.path, second.query) == ("dense", "汽车可以随便停吗", "dense",
                                                                    "我可以撤回同意吗")
    assert out["documents"] == first.documents and len(first.documents) == 3
    assert keys(first.documents)[0] == f"{LAW_B}第一条" and keys(second.documents)[0] == f"{LAW_A}第三条"
    scores = [d.score for d in first.documents]
    assert scores == sorted(scores, reverse=True)


def test_a_run_top_k_overrides_the_built_one(fixture_store) -> None:
    embedder = FixedEmbedder(stored_vector(fixture_store, f"{LAW_A}第一条"))
    retriever = DenseRetriever(document_store=fixture_store, embedder=embedder, top_k=2)
    assert len(retriever.run(queries=["问"])["documents"]) == 2
    assert len(retriever.run(queries=["问"], top_k=5)["documents"]) == 5


def test_the_built_filters_apply_until_a_run_gives_its_own(fixture_store) -> None:
    """A run's filters replace the built ones; they are not combined."""
    embedder = FixedEmbedder(stored_vector(fixture_store, f"{LAW_A}第一条"))
    retriever = DenseRetriever(document_store=fixture_store, embedder=embedder, top_k=10, filters=ONLY_B)
    assert {d.meta["law"] for d in retriever.run(queries=["问"])["documents"]} == {LAW_B}
    assert {d.meta["law"] for d in retriever.run(queries=["问"], filters=ONLY_A)["documents"]} == {LAW_A}


def test_no_queries_embed_nothing(empty_store) -> None:
    embedder = FixedEmbedder([0.0])
    out = DenseRetriever(document_store=empty_store, embedder=embedder).run(queries=[])
    assert out == {"documents": [], "rankings": []} and embedder.texts == []


def test_a_retriever_built_with_one_of_haystacks_embedders_loads_with_it(fixture_store,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    embedder = OpenAITextEmbedder(api_key=Secret.from_env_var("OPENAI_API_KEY"), model="text-embedding-3-small",
                                  prefix="query: ")
    data = DenseRetriever(document_store=fixture_store, embedder=embedder, top_k=4, filters=ONLY_A).to_dict()
    restored = DenseRetriever.from_dict(copy.deepcopy(data))
    assert isinstance(restored.embedder, OpenAITextEmbedder) and restored.embedder.prefix == "query: "
    assert (restored.top_k, restored.filters) == (4, ONLY_A) and restored.document_store is fixture_store
    assert restored.to_dict() == data

