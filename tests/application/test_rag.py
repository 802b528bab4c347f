"""`application.rag`: the question key of the answer cache (`normalise`), the run data of both query pipelines
(`pipeline_inputs`), `AgenticRAG`'s input checks, its cache (keys, LRU eviction, clearing), retrieval without an LLM
and the warnings its results carry. The agentic loop's branches are in tests/pipelines/test_agentic.py."""

from pathlib import Path

import pytest

from application import rag as rag_module
from application.rag import AgenticRAG, normalise, pipeline_inputs
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import SourceManifest
from harness.llm_script import ANSWERER
from harness.openai_server import ScriptedOpenAIServer
from helpers.records.contracts import RETRIEVAL_PATHS
from helpers.statutes.versions import OPEN_END
from pipelines.indexing import Indexer, file_sources
from pipelines.stores import open_document_store

LAW = "示例信息保护法"
LAW_TEXT = f"""# {LAW}
第一条 为了保护个人信息权益，制定本法。
第二条 处理个人信息应当取得个人同意。
第三条 个人有权撤回其同意。
第四条 个人信息处理者应当采取必要措施保障个人信息安全。
"""
QUESTION = "处理个人信息需要取得个人同意吗"
ANSWER = f"【相关法条】《{LAW}》第二条：处理个人信息应当取得个人同意。【免责声明】仅供参考。"


def index_law(settings: Settings, folder: Path) -> KnowledgeBaseStore:
    """A store holding `LAW_TEXT`, indexed through the real pipeline."""
    (folder / "law.md").write_text(LAW_TEXT, encoding="utf-8")
    store = open_document_store(settings)
    Indexer(store, settings).index(file_sources([str(folder / "law.md")]), progress=False)
    return store


def module_store(tmp_path_factory: pytest.TempPathFactory, e5_model: Path, name: str):
    """`index_law` into a folder of its own, closed when the module's tests are done."""
    folder = tmp_path_factory.mktemp(name)
    store = index_law(Settings(qdrant_path=folder / "qdrant", embedding_model=str(e5_model)), folder)
    yield store
    store.close()


@pytest.fixture(scope="module")
def law_store(tmp_path_factory: pytest.TempPathFactory, e5_model: Path):
    """One store for the tests that only read it."""
    yield from module_store(tmp_path_factory, e5_model, "law_store")


@pytest.fixture(scope="module")
def changed_store(tmp_path_factory: pytest.TempPathFactory, e5_model: Path):
    """One store for the tests that change it (each in a way the other does not read)."""
    yield from module_store(tmp_path_factory, e5_model, "changed_store")


@pytest.fixture
def rag(law_store: KnowledgeBaseStore, settings: Settings, llm: ScriptedOpenAIServer) -> AgenticRAG:
    """A fresh `AgenticRAG` (an empty cache) over the shared store, the scripted server as its LLM."""
    llm.add_rule(ANSWERER, ANSWER)
    return AgenticRAG(law_store, Settings.from_env(), top_k=3)


@pytest.fixture
def own_rag(changed_store: KnowledgeBaseStore, settings: Settings, llm: ScriptedOpenAIServer) -> AgenticRAG:
    """A fresh `AgenticRAG` over the store the warning tests change (the scripted server's default reply)."""
    return AgenticRAG(changed_store, Settings.from_env(), top_k=3)


def answer_calls(llm: ScriptedOpenAIServer) -> int:
    return len(llm.calls(ANSWERER))


# --- normalise ------------------------------------------------------------------------------------------------


def test_normalise_folds_spacing_trailing_punctuation_and_case() -> None:
    assert normalise("  公司  收集\t我的\n个人信息？？ ") == "公司 收集 我的 个人信息"
    assert normalise("Is PIPL Article 13 RELEVANT?!") == "is pipl article 13 relevant"
    assert normalise("需要同意吗。") == normalise("需要同意吗！") == normalise("需要同意吗") == "需要同意吗"


def test_normalise_keeps_leading_and_inner_punctuation() -> None:
    """Only the end is trimmed: two questions that differ inside stay two cache entries."""
    assert normalise("？第二条，还是第三条？") == "？第二条，还是第三条"
    assert normalise("第二条。吗？") == "第二条。吗"


# --- pipeline_inputs ---------------------------------------------------------------------------------------------


def test_rag_mode_sends_the_question_to_every_path_and_the_selector(rag: AgenticRAG) -> None:
    only = {"field": "meta.law", "operator": "==", "value": LAW}

    def callback(chunk: object) -> None:
        pass

    data = pipeline_inputs(rag.pipelines["rag"], "rag", QUESTION, filters=only, top_k=2, streaming_callback=callback)
    for path in RETRIEVAL_PATHS:
        assert data[path] == {"filters": only, "queries": [QUESTION]}
    assert data["selector"] == {"query": QUESTION}
    assert data["answer"] == {"streaming_callback": callback}
    assert data["joiner"] == {"top_k": 2}
    assert "router" not in data


def test_agentic_mode_sends_the_question_to_the_router_only(rag: AgenticRAG) -> None:
    """In the loop the rewriter decides what each path searches: the paths get the filters, not the question."""
    data = pipeline_inputs(rag.pipelines["agentic"], "agentic", QUESTION)
    assert data["router"] == {"query": QUESTION}
    for path in RETRIEVAL_PATHS:
        assert data[path] == {"filters": None}
    assert "selector" not in data and data["answer"] == {"streaming_callback": None}


# --- ask: input checks -------------------------------------------------------------------------------------------


def test_an_empty_question_is_refused_before_any_llm_call(rag: AgenticRAG, llm: ScriptedOpenAIServer) -> None:
    for query in ("", "   ", "\n\t"):
        with pytest.raises(ValueError, match="query is empty"):
            rag.ask(query, mode="rag")
    assert llm.requests == []


def test_a_mode_that_is_not_a_query_pipeline_is_refused_naming_both(rag: AgenticRAG) -> None:
    for mode in ("agent", "retrieve", "RAG", "hybrid"):
        with pytest.raises(ValueError, match=f"mode must be one of agentic, rag; got '{mode}'"):
            rag.ask(QUESTION, mode=mode)


# --- ask: the answer cache -----------------------------------------------------------------------------------------


def test_a_rag_answer_is_shaped_and_stamped_with_the_knowledge_base(rag: AgenticRAG, llm: ScriptedOpenAIServer) -> None:
    result = rag.ask(QUESTION, mode="rag")
    assert result.mode == "rag" and result.knowledge_base == rag.store.knowledge_base
    assert result.trace["route"]["decided_by"] == "mode" and result.trace["llm_calls"]["router"] == 0
    assert result.trace["total_seconds"] >= 0 and "cached" not in result.trace
    assert f"{LAW}第二条" in [c["key"] for c in result.citations]
    assert answer_calls(llm) == 1


def test_the_cache_key_holds_mode_filters_and_top_k(rag: AgenticRAG, llm: ScriptedOpenAIServer) -> None:
    """The same question asked with other filters or another depth is another answer, not a cache hit."""
    only = {"field": "meta.article_no", "operator": "in", "value": ["第二条", "第三条"]}
    rag.ask(QUESTION, mode="rag")
    assert rag.ask(f" {QUESTION}？ ", mode="rag").trace["cached"]
    assert not rag.ask(QUESTION, mode="rag", filters=only).trace.get("cached")
    assert not rag.ask(QUESTION, mode="rag", top_k=1).trace.get("cached")
    assert answer_calls(llm) == 3
    assert rag.ask(QUESTION, mode="rag", filters=only).trace["cached"] and answer_calls(llm) == 3


def test_a_cache_hit_is_reported_to_on_step_as_the_only_stage(rag: AgenticRAG) -> None:
    rag.ask(QUESTION, mode="rag")
    steps: list[dict] = []
    again = rag.ask(QUESTION, mode="rag", on_step=steps.append)
    assert again.trace["cached"] and [s["stage"] for s in steps] == ["cache"]


def test_clear_cache_makes_the_next_ask_run_again(rag: AgenticRAG, llm: ScriptedOpenAIServer) -> None:
    rag.ask(QUESTION, mode="rag")
    rag.clear_cache()
    again = rag.ask(QUESTION, mode="rag")
    assert not again.trace.get("cached") and answer_calls(llm) == 2


def test_the_cache_forgets_the_least_recently_used_answer(rag: AgenticRAG, llm: ScriptedOpenAIServer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A hit moves its entry to the end: with room for two, asking A, B, A, C evicts B, not A."""
    monkeypatch.setattr(rag_module, "CACHE_SIZE", 2)
    first, second, third = "第一条讲什么", "第二条讲什么", "第三条讲什么"
    for query in (first, second, first, third):
        rag.ask(query, mode="rag")
    assert answer_calls(llm) == 3
    assert rag.ask(first, mode="rag").trace["cached"]
    assert rag.ask(third, mode="rag").trace["cached"]
    assert not rag.ask(second, mode="rag").trace.get("cached")
    assert answer_calls(llm) == 4


# --- retrieve ------------------------------------------------------------------------------------------------------


def test_retrieve_ranks_articles_without_calling_the_llm(rag: AgenticRAG, llm: ScriptedOpenAIServer) -> None:
    result = rag.retrieve("撤回同意", top_k=2)
    assert llm.requests == []
    assert result.mode == "retrieve" and result.answer == "" and result.knowledge_base == rag.store.knowledge_base
    assert len(result.documents) == 2 and result.documents[0]["key"] == f"{LAW}第三条"
    scores = [d["score"] for d in result.documents]
    assert scores == sorted(scores, reverse=True)
    assert all(d["paths"] for d in result.documents)
    assert result.trace["query"] == "撤回同意"


def test_retrieve_keeps_to_the_filters(rag: AgenticRAG) -> None:
    only = {"field": "meta.article_no", "operator": "==", "value": "第四条"}
    result = rag.retrieve("撤回同意", filters=only)
    assert [d["key"] for d in result.documents] == [f"{LAW}第四条"]


# --- warnings ------------------------------------------------------------------------------------------------------


def test_knowledge_base_warnings_are_read_again_only_on_refresh(own_rag: AgenticRAG) -> None:
    """What is wrong with the knowledge base is read when it is opened and by `refresh_warnings`, not per question
    (a run interrupted meanwhile shows from the refresh on)."""
    assert own_rag.retrieve(QUESTION).warnings == []
    manifest = SourceManifest(own_rag.store)
    record, = manifest.all()
    manifest.mark_indexing({record.source: record.content_hash})
    assert own_rag.retrieve(QUESTION).warnings == []
    own_rag.refresh_warnings()
    warning, = own_rag.retrieve(QUESTION).warnings
    assert warning.startswith(f"1 source(s) were interrupted during indexing ({record.source})")


def test_as_of_warnings_follow_the_knowledge_base_ones(own_rag: AgenticRAG) -> None:
    """A law the question names, held only in a version that takes effect later, adds its `as_of` warning after the
    knowledge base's own warnings; without `as_of`, or naming no law, none is added."""
    store = own_rag.store
    for ids, batch in store.scroll_sources({record.source for record in SourceManifest(store).all()}):
        store.set_metas([(point_id, {**doc.meta, "in_force": True, "valid_from": 20210101, "valid_to": OPEN_END})
                         for point_id, doc in zip(ids, batch, strict=True)])
    own_rag.warnings = ["知识库的警告"]
    named = f"{LAW}第二条是什么"
    assert own_rag.warnings_for(named) == ["知识库的警告"]
    assert own_rag.warnings_for("处理个人信息要同意吗", "2020-01-01") == ["知识库的警告"]
    first, second = own_rag.warnings_for(named, "2020-01-01")
    assert first == "知识库的警告"
    assert second.startswith(f"知识库中没有《{LAW}》在 2020-01-01 有效的版本（现有版本自 2021-01-01 起施行）")
    assert own_rag.warnings_for(named, "2021-06-01") == ["知识库的警告"]
    assert own_rag.ask(named, mode="rag", as_of="2020-01-01").warnings == [first, second]
