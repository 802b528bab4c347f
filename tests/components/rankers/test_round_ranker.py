"""RoundRanker: round 1 passes through; from round 2 the pool is widened (neighbours, referred articles, within the
run's filters) and reranked by the LLM's yes/no reranker, against a scripted OpenAI-compatible server."""

import pytest
from haystack import Document, Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from components.rankers.round_ranker import RoundRanker
from components.retrievers.store_search import StoreSearch
from harness.openai_server import ScriptedOpenAIServer
from pipelines.indexing import Indexer, file_sources
from pipelines.stores import open_document_store
from pipelines.yaml_export import ALLOWED_MODULES

LAW = "示例合同法"
TEXT = f"""# {LAW}
第一条 为了规范合同，制定本法。
第二条 合同应当依法订立。
第三条 违反本法第七条规定的，应当赔偿损失。
第四条 当事人可以约定违约金。
第五条 当事人可以约定定金。
第六条 合同可以变更。
第七条 当事人应当按照约定全面履行自己的义务。
"""
YES = [("是", -0.05), ("否", -3.0)]


@pytest.fixture
def contract_store(settings, tmp_path):
    (tmp_path / "law.md").write_text(TEXT, encoding="utf-8")
    store = open_document_store(settings)
    Indexer(store, settings).index(file_sources([str(tmp_path / "law.md")]), progress=False)
    yield store
    store.close()


def articles(store, *numbers: str) -> list[Document]:
    return StoreSearch(store).articles([f"{LAW}第{n}条" for n in numbers])


def numbers(docs: list[Document]) -> list[str]:
    return [d.meta["key"].removeprefix(LAW) for d in docs]


def ranker_for(server: ScriptedOpenAIServer) -> LLMRelevanceRanker:
    generator = OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), model="m", api_base_url=server.base_url,
                                    max_retries=0)
    return LLMRelevanceRanker(chat_generator=generator, max_workers=1)


def test_round_one_passes_through_without_a_call(contract_store):
    fused = articles(contract_store, "三", "一", "六")
    with ScriptedOpenAIServer(default="是") as server:
        ranker = RoundRanker(document_store=contract_store, ranker=ranker_for(server), top_k=2)
        out = ranker.run(query="违约怎么办", documents=fused, plan={"round": 1})
        assert server.requests == []
    assert numbers(out["documents"]) == ["第三条", "第一条"]
    assert out["rerank"] == {}


def test_round_two_widens_the_pool_and_the_llm_reorders_it(contract_store):
    """The neighbours (±2) of the best hit and the article it refers to join the pool; the LLM finds the decisive
    one among them."""
    fused = articles(contract_store, "三", "六")
    with ScriptedOpenAIServer(default="否") as server:
        server.add_rule("全面履行", "是", top_logprobs=YES)
        ranker = RoundRanker(document_store=contract_store, ranker=ranker_for(server), best=1, span=2, top_k=3,
                             fuse=False)
        out = ranker.run(query="对方不履行合同义务怎么办", documents=fused, plan={"round": 2})
        scored = len(server.requests)
        fused_out = RoundRanker(document_store=contract_store, ranker=ranker_for(server), best=1, span=2,
                                top_k=3).run(query="对方不履行合同义务怎么办", documents=fused, plan={"round": 2})
    assert numbers(out["documents"])[0] == "第七条"  # referred to by 第三条, not found by the search
    # fused with the search's order (RRF), the search's two hits stay ahead of what only the LLM vouches for
    assert numbers(fused_out["documents"]) == ["第三条", "第六条", "第七条"]
    assert out["rerank"]["pool"] == 7  # 三, 六 + 二, 四, 一, 五 (neighbours) + 七 (referred)
    assert out["rerank"]["added"] == 5
    assert out["rerank"]["llm_calls"] == scored == 7 == fused_out["rerank"]["llm_calls"]
    assert out["rerank"]["seconds"] >= 0
    assert len(out["documents"]) == 3


def test_the_run_filters_apply_to_what_is_added(contract_store):
    fused = articles(contract_store, "三")
    not_seventh = {"field": "meta.article_no", "operator": "!=", "value": "第七条"}
    with ScriptedOpenAIServer(default="否") as server:
        ranker = RoundRanker(document_store=contract_store, ranker=ranker_for(server), best=1, span=1, top_k=10)
        out = ranker.run(query="问", documents=fused, plan={"round": 3}, filters=not_seventh)
    assert sorted(numbers(out["documents"])) == ["第三条", "第二条", "第四条"]


def test_a_failing_llm_keeps_the_fused_order_first(contract_store):
    fused = articles(contract_store, "六", "三")
    with ScriptedOpenAIServer() as server:
        server.add_rule("", "boom", status=500)
        ranker = RoundRanker(document_store=contract_store, ranker=ranker_for(server), best=1, span=1, top_k=10)
        out = ranker.run(query="问", documents=fused, plan={"round": 2})
    assert numbers(out["documents"]) == ["第六条", "第三条", "第五条", "第七条"]


def test_empty_and_single_inputs(contract_store):
    with ScriptedOpenAIServer(default="否") as server:
        ranker = RoundRanker(document_store=contract_store, ranker=ranker_for(server), best=1, span=1)
        assert ranker.run(query="问", documents=[], plan={"round": 2}) == {"documents": [], "rerank": {}}
        single = ranker.run(query="问", documents=articles(contract_store, "一"), plan={"round": 2})
    assert numbers(single["documents"]) == ["第一条", "第二条"]  # 第一条 has one neighbour within ±1


@pytest.mark.parametrize(("option", "value"), [("depth", 0), ("span", -1), ("best", -1), ("from_round", 0),
                                               ("top_k", 0)])
def test_bad_settings_are_refused(contract_store, option, value):
    with pytest.raises(ValueError, match=option):
        RoundRanker(document_store=contract_store, ranker=LLMRelevanceRanker(), **{option: value})


def test_a_ranker_must_be_a_component(contract_store):
    with pytest.raises(TypeError, match="ranker"):
        RoundRanker(document_store=contract_store, ranker="llm")


def test_round_trip(contract_store):
    """Through a pipeline's YAML, as Hayhooks loads it (the nested ranker's module allowed like the others)."""
    ranker = RoundRanker(document_store=contract_store, ranker=LLMRelevanceRanker(top_n=5, max_chars=200),
                         depth=40, best=2, span=1, from_round=3, top_k=7, fuse=False)
    pipeline = Pipeline()
    pipeline.add_component("round_ranker", ranker)
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES)
    again = loaded.get_component("round_ranker")
    assert again.to_dict() == ranker.to_dict()
    assert isinstance(again.ranker, LLMRelevanceRanker) and again.ranker.max_chars == 200
    assert (again.depth, again.best, again.span, again.from_round, again.top_k, again.fuse) == (40, 2, 1, 3, 7, False)
    assert again.document_store is contract_store  # the open store is shared, not opened twice


def test_the_llm_reranker_loads_from_its_own_dict():
    """It wrote its role into its dict but did not take one: a pipeline with RERANKER=llm could not be loaded."""
    ranker = LLMRelevanceRanker(top_n=4, max_chars=120, top_k=3, role="light")
    again = LLMRelevanceRanker.from_dict(ranker.to_dict())
    assert (again.top_n, again.max_chars, again.top_k, again.role) == (4, 120, 3, "light")
