import copy
import logging
import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from haystack import Document
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from components.retrievers.citation_lookup import CitationLookup, VersionGap, names_in
from components.retrievers.dense_retriever import DenseRetriever
from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from components.retrievers.store_search import StoreSearch
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.qdrant_store import QdrantServerDocumentStore, qdrant_client_of
from harness.openai_server import ScriptedOpenAIServer
from helpers.statutes.labels import article_no
from helpers.statutes.versions import OPEN_END
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer, term_id
from pipelines.embedders import text_embedder
from pipelines.retrieval import build_retrieval_pipeline, retrieve

LAW_A = "示例信息保护法"
LAW_B = "示例交通法"
ONLY_B = {"field": "meta.law", "operator": "==", "value": LAW_B}


def keys(docs):
    return [d.meta["key"] for d in docs]


@pytest.fixture(params=["qdrant", "edge"])
def backend(request) -> str:
    """Every retrieval test runs on both search backends: Qdrant's engine in-process (Qdrant Edge, the embedded
    default) and a Qdrant server's search through qdrant-haystack (qdrant-client's local mode standing in for the
    server: the same client calls and scores)."""
    return request.param


def server_copy(edge: QdrantEdgeDocumentStore, path: Path) -> QdrantServerDocumentStore:
    """The Edge store's documents, vectors and all, in the server store (on qdrant-client's local mode)."""
    local = QdrantServerDocumentStore(path=str(path), index="kb", embedding_dim=edge.embedding_dim,
                                      similarity="cosine", use_sparse_embeddings=True, sparse_idf=True,
                                      progress_bar=False)
    edge.return_embedding = True
    try:
        local.write_documents(edge.filter_documents())
    finally:
        edge.return_embedding = False
    return local


@pytest.fixture
def store(fixture_store, backend, tmp_path):
    """The fixture store (Qdrant Edge), or for ``qdrant`` its copy in a qdrant-haystack store (nothing
    re-embedded)."""
    if backend == "edge":
        yield fixture_store
        return
    local = server_copy(fixture_store, tmp_path / "server")
    assert local.count_documents() == fixture_store.count_documents()
    yield local
    local.close()


def test_bm25_path(store):
    out = JiebaBM25Retriever(document_store=store, top_k=3).run(queries=["机动车停放", "撤回同意"])
    assert keys(out["rankings"][0].documents)[0] == f"{LAW_B}第一条"
    assert keys(out["rankings"][1].documents)[0] == f"{LAW_A}第三条"
    assert out["documents"] == out["rankings"][0].documents
    assert all(r.path == "bm25" for r in out["rankings"])


def test_bm25_character_ngrams_match_where_words_do_not(store):
    # “停车” is one jieba word; the statute says “停放”: only the shared character “停” connects them
    words_only = JiebaBM25Retriever(document_store=store, top_k=3, char_ngrams=[])
    assert words_only.run(queries=["停车"])["documents"] == []
    out = JiebaBM25Retriever(document_store=store, top_k=3).run(queries=["停车"])
    assert keys(out["documents"])[0] == f"{LAW_B}第一条"


def test_tokenizer_adds_marked_character_ngrams():
    tokens = JiebaTokenizer(stopwords="").tokenize("同意，A1")
    assert tokens == ["同意", "a1", "#同", "#意", "#同意", "#a", "#1", "#a1"]  # no n-gram spans the comma
    assert JiebaTokenizer(char_ngrams=()).tokenize("同意，A1") == ["同意", "a1"]
    with pytest.raises(ValueError, match="char_ngrams"):
        JiebaTokenizer(char_ngrams=(0,))


def test_dense_path(store, settings):
    retriever = DenseRetriever(document_store=store, embedder=text_embedder(settings), top_k=2)
    retriever.warm_up()
    out = retriever.run(queries=["汽车可以随便停吗"])
    assert keys(out["documents"])[0] == f"{LAW_B}第一条"


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_filters_apply_on_every_path(store, settings, mode):
    pipeline = build_retrieval_pipeline(store, replace(settings), mode=mode, top_k=10)
    pipeline.warm_up()
    docs = retrieve(pipeline, ["处理个人信息应当取得同意", "第一条"], filters=ONLY_B)
    assert docs and {d.meta["law"] for d in docs} == {LAW_B}


@pytest.mark.parametrize(
    ("query", "expected"),
    [("示例信息保护法第十三条是什么", [f"{LAW_A}第十三条"]),
     ("示例信息保护法第13条", [f"{LAW_A}第十三条"]),
     ("《示例信息保护法》第十三条之一", [f"{LAW_A}第十三条之一"]),
     ("根据示例交通法2条和第1条", [f"{LAW_B}第二条", f"{LAW_B}第一条"]),
     ("第二条", []),  # two laws in the knowledge base: a bare article number is ambiguous
     ("不存在的法第一条", [])],
)
def test_exact_citation_lookup(store, query, expected):
    assert keys(CitationLookup(document_store=store).find(query)) == expected


def test_bare_article_number_resolves_with_a_law_filter(store):
    lookup = CitationLookup(document_store=store)
    assert keys(lookup.find("第2条", ONLY_B)) == [f"{LAW_B}第二条"]


def test_an_explicit_citation_outside_the_filter_is_not_returned(store, settings):
    """Issue 19, bug 4: the lookup ignored filters, and its path weight put the cited article first anyway."""
    cited = "示例信息保护法第十三条是什么"
    lookup = CitationLookup(document_store=store)
    assert keys(lookup.find(cited, ONLY_B)) == []
    in_law_a = {"field": "meta.law", "operator": "==", "value": LAW_A}
    assert keys(lookup.find(cited, in_law_a)) == [f"{LAW_A}第十三条"]
    pipeline = build_retrieval_pipeline(store, replace(settings), top_k=10)
    pipeline.warm_up()
    assert {d.meta["law"] for d in retrieve(pipeline, [cited], filters=ONLY_B)} <= {LAW_B}


def test_a_law_named_but_held_in_no_version_of_the_day_is_a_version_gap(fixture_store, backend, tmp_path):
    """Issue 46, item 4: the laws a query names (by name, or a bare citation the law filter resolves) that the
    knowledge base holds in no version in force on ``as_of``, found by payload queries on both backends."""
    for ids, batch in fixture_store.scroll_sources({"file:a.md"}):  # 示例信息保护法 in force from 2021-01-01
        fixture_store.set_metas([(point_id, {**doc.meta, "in_force": True, "valid_from": 20210101,
                                             "valid_to": OPEN_END})
                          for point_id, doc in zip(ids, batch, strict=True)])
    store = fixture_store if backend == "edge" else server_copy(fixture_store, tmp_path / "server")
    lookup = CitationLookup(document_store=store)
    gap = VersionGap(LAW_A, 20200101, 20210101, OPEN_END)
    assert lookup.version_gaps("示例信息保护法第二条和示例交通法第一条", "2020-01-01") == [gap]  # 交通法: no versions
    assert lookup.version_gaps("根据示例信息保护法，处理个人信息要同意吗", "2020-01-01") == [gap]
    in_law_a = {"field": "meta.law", "operator": "==", "value": LAW_A}
    assert lookup.version_gaps("第二条讲了什么", "2020-01-01", in_law_a) == [gap]
    assert lookup.version_gaps("示例信息保护法第二条", "2021-01-01") == []
    assert lookup.version_gaps("示例信息保护法第二条", None) == []


def test_law_names_in_a_query_longest_first():
    laws = ["中华人民共和国保险法", "中华人民共和国社会保险法", "中华人民共和国民法典"]
    assert names_in("社会保险法和中华人民共和国民法典", laws) == ["中华人民共和国社会保险法", "中华人民共和国民法典"]
    assert names_in("保险法第十条与社会保险法", laws) == ["中华人民共和国保险法", "中华人民共和国社会保险法"]


def test_article_no_normalisation():
    assert article_no("1032") == "第一千零三十二条"
    assert article_no("十三", "一") == "第十三条之一"


def test_citation_is_placed_first_in_the_pipeline(store, settings):
    pipeline = build_retrieval_pipeline(store, replace(settings), mode="hybrid",
                                        top_k=3)
    pipeline.warm_up()
    docs = retrieve(pipeline, ["示例交通法第2条讲了什么"])
    assert keys(docs)[0] == f"{LAW_B}第二条"
    assert "citation" in docs[0].meta["retrieval"]["paths"]


def test_bm25_scores_are_lucene_bm25_on_every_backend(fixture_store, settings, tmp_path):
    """Score = Σ idf · count · tf(k1+1)/(tf + k1(1 − b + b·dl/avgdl)), computed here from the raw text."""
    encoder_terms = JiebaTokenizer(mode="search")
    docs = sorted(fixture_store.filter_documents(), key=lambda d: d.meta["key"])
    counts = {d.meta["key"]: Counter(term_id(t) for t in encoder_terms.tokenize(
        "\n".join([*(str(d.meta[f]) for f in ("law", "chapter") if d.meta.get(f)), d.content or ""]))) for d in docs}
    avgdl = sum(sum(c.values()) for c in counts.values()) / len(counts)
    terms = encoder_terms.tokenize("撤回个人同意")
    query = Counter(term_id(t) for t in terms)
    k1, b = settings.bm25_k1, settings.bm25_b

    def expected(key: str) -> float:
        tf, dl = counts[key], sum(counts[key].values())
        return sum(q * math.log1p((len(docs) - df + 0.5) / (df + 0.5)) * tf[t] * (k1 + 1)
                   / (tf[t] + k1 * (1 - b + b * dl / avgdl))
                   for t, q in query.items() if tf[t] for df in [sum(1 for c in counts.values() if c[t])])

    matching = {k: expected(k) for k in counts if expected(k) > 0}
    assert len(matching) >= 5
    server = server_copy(fixture_store, tmp_path / "server")
    for searched in (server, fixture_store):
        hits = StoreSearch(searched).bm25(terms, top_k=len(docs))
        assert {d.meta["key"]: d.score for d in hits} == pytest.approx(matching, rel=1e-5)
    server.close()


def test_each_store_is_searched_by_its_own_engine(fixture_store, tmp_path):
    server = server_copy(fixture_store, tmp_path / "server")
    assert fixture_store.engine == "edge" and server.engine == "qdrant"
    assert isinstance(fixture_store, KnowledgeBaseStore) and isinstance(server, KnowledgeBaseStore)
    server.close()


def test_qdrant_backend_never_scrolls_the_collection(fixture_store, settings, monkeypatch, tmp_path):
    """Issue 21: on the server-native path every search is a Qdrant query; nothing loads the collection."""
    server = server_copy(fixture_store, tmp_path / "server")
    client = qdrant_client_of(server)

    def no_scroll(*args, **kwargs):
        raise AssertionError("the qdrant search backend scrolled the collection")

    monkeypatch.setattr(client, "scroll", no_scroll)
    pipeline = build_retrieval_pipeline(server, settings, top_k=5)
    pipeline.warm_up()
    docs = retrieve(pipeline, ["示例交通法第2条讲了什么", "机动车停放"], filters=ONLY_B)
    assert keys(docs)[0] == f"{LAW_B}第二条" and {d.meta["law"] for d in docs} == {LAW_B}
    assert keys(CitationLookup(document_store=server).find("示例信息保护法第十三条之一")) \
        == [f"{LAW_A}第十三条之一"]
    server.close()


def test_llm_reranker_orders_by_probability_of_yes():
    documents = [Document(content=text, meta={"key": text, "law": "法", "article_no": "第一条"})
                 for text in ("机动车停放规定", "处理个人信息应当取得个人同意", "驾驶人遵守信号")]
    with ScriptedOpenAIServer(default="否") as server:
        server.add_rule("个人同意", "是", top_logprobs=[("是", -0.05), ("否", -3.0)])
        server.add_rule("机动车", "否", top_logprobs=[("否", -0.2), ("是", -1.7)])
        server.add_rule("驾驶人", "否", top_logprobs=[("否", -0.01), ("是", -5.0)])
        generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), model="m", api_base_url=server.base_url)
        ranker = LLMRelevanceRanker(chat_generator=generator, top_n=3, max_workers=1)
        out = ranker.run(query="收集个人信息要同意吗", documents=documents)["documents"]
        sent = server.requests[0]
    assert [d.content for d in out] == ["处理个人信息应当取得个人同意", "机动车停放规定", "驾驶人遵守信号"]
    assert out[0].meta["llm_relevance"] == pytest.approx(math.exp(-0.05) / (math.exp(-0.05) + math.exp(-3.0)))
    assert sent["logprobs"] is True and sent["max_tokens"] == 1


def test_llm_reranker_does_not_warn_about_its_own_one_token_replies(caplog):
    documents = [Document(content=t, meta={"key": t}) for t in ("甲", "乙")]
    with ScriptedOpenAIServer() as server, caplog.at_level(logging.WARNING):
        server.add_rule("", "是", finish_reason="length")  # what a real server says when max_tokens=1 cuts it
        generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), model="m", api_base_url=server.base_url)
        LLMRelevanceRanker(chat_generator=generator, top_n=2, max_workers=2).run(query="问", documents=documents)
        assert len(server.requests) == 2
        assert "truncated" not in caplog.text
        # the same cut-off reply outside the ranker still warns: only the ranker's calls are exempt
        generator.run(messages=[ChatMessage.from_user("问")], generation_kwargs={"max_tokens": 1})
    assert "truncated before reaching a natural stopping point" in caplog.text


def test_llm_reranker_keeps_order_when_the_llm_fails():
    documents = [Document(content=t, meta={"key": t}) for t in ("甲", "乙", "丙")]
    with ScriptedOpenAIServer() as server:
        server.add_rule("", "boom", status=500)
        generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), model="m", api_base_url=server.base_url,
                                        max_retries=0)
        out = LLMRelevanceRanker(chat_generator=generator, top_n=2).run(query="问", documents=documents)["documents"]
    assert [d.content for d in out] == ["甲", "乙", "丙"]


def test_the_reranker_reads_the_pool_below_top_k(fixture_store, settings):
    """A reranker handed only the top_k it returns could never bring up an article ranked just below the cut."""
    fused = retrieve(build_retrieval_pipeline(fixture_store, settings, mode="bm25", top_k=50), ["个人信息同意"])
    wanted = fused[-1].content  # the fused pool's last article
    with ScriptedOpenAIServer(default="否") as server:
        server.add_rule(wanted[:8], "是", top_logprobs=[("是", -0.05), ("否", -3.0)])
        generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), model="m", api_base_url=server.base_url)
        ranker = LLMRelevanceRanker(chat_generator=generator, top_n=20, max_workers=1)
        pipeline = build_retrieval_pipeline(fixture_store, settings, mode="bm25", top_k=1, reranker=ranker)
        assert [d.content for d in retrieve(pipeline, ["个人信息同意"])] == [wanted]
        assert len(server.requests) == len(fused)
        two = retrieve(pipeline, ["个人信息同意"], top_k=2)  # a run's top_k is the reranker's cut
    assert len(two) == 2 and two[0].content == wanted


def test_cross_encoder_wiring_with_a_tiny_model(fixture_store, settings, tmp_path):
    from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *"个人信息同意机动车停放"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]")
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(tmp_path / "tiny-ce")
    fast.save_pretrained(tmp_path / "tiny-ce")

    ranker = SentenceTransformersSimilarityRanker(model=str(tmp_path / "tiny-ce"), top_k=10)
    pipeline = build_retrieval_pipeline(fixture_store, settings, mode="bm25", top_k=3, reranker=ranker)
    pipeline.warm_up()
    docs = retrieve(pipeline, ["个人信息同意"])
    pool = retrieve(build_retrieval_pipeline(fixture_store, settings, mode="bm25", top_k=50), ["个人信息同意"])
    assert len(docs) == 3 and len(pool) > 3  # the pipeline's top_k, chosen from the whole pool
    assert set(keys(docs)) <= set(keys(pool))
    scores = [d.score for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_retrievers_serialise_and_share_the_store(fixture_store, settings):
    from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder

    components = [
        JiebaBM25Retriever(document_store=fixture_store, top_k=7, char_ngrams=[1]),
        DenseRetriever(document_store=fixture_store, embedder=text_embedder(settings), top_k=3),
        CitationLookup(document_store=fixture_store),
    ]
    for component in components:
        data = component.to_dict()
        restored = type(component).from_dict(copy.deepcopy(data))  # from_dict fills in the store object
        assert restored.to_dict() == data
        assert restored.document_store is fixture_store  # one client per embedded path
        old = copy.deepcopy(data)  # YAML written while the engine was a setting still loads
        old["init_parameters"]["search_backend"] = "auto"
        assert type(component).from_dict(old).to_dict() == data
    encoder = JiebaBM25DocumentEncoder(k1=1.5, b=0.5)  # serialised by Haystack's defaults (init args = attributes)
    data = component_to_dict(encoder, "bm25")
    assert component_to_dict(component_from_dict(JiebaBM25DocumentEncoder, data, "bm25"), "bm25") == data
    assert (data["init_parameters"]["k1"], data["init_parameters"]["b"]) == (1.5, 0.5)
    with pytest.raises(ValueError, match="k1"):
        JiebaBM25DocumentEncoder(k1=0)
