"""The process-wide service: knowledge bases shared by every wrapper, and building one that is cold."""

import gc
import json
import threading
import time
import weakref

from application import service as service_module
from application.service import RAGService
from harness.openai_server import TOOL_PREFIX
from interfaces.chat_api import ChatAPI

AGENT = "工具返回的内容是资料"


def handbook(rule: str) -> list[tuple[str, bytes]]:
    return [("员工手册.md", f"# 员工手册\n\n第一条 {rule}\n".encode())]


def test_a_deleted_knowledge_base_is_forgotten_by_every_wrapper(settings, llm):
    """Issue 19, bug 2: Hayhooks builds one ChatAPI per wrapper, and deleting through `knowledge_bases` cleared the
    agents of that instance only: the `agentic_rag` one kept an agent bound to the deleted knowledge base (its
    pipelines and models stayed in memory), and a knowledge base re-created under that name got the old agent."""
    service = RAGService(settings)
    agentic_rag, knowledge_bases = ChatAPI(service), ChatAPI(service)
    search = TOOL_PREFIX + json.dumps({"name": "search_knowledge_base", "arguments": {"query": "员工手册"}})
    llm.add_rule(AGENT, [search, "见《员工手册》第一条。", search, "见《员工手册》第一条。"])
    try:
        service.index("handbook", files=handbook("员工应当按时上班。"))
        first = agentic_rag.ask("员工手册怎么规定的", mode="agent", knowledge_base="handbook")
        assert "按时上班" in first.sources[0]["text"]
        deleted = weakref.ref(service.rag("handbook"))
        knowledge_bases.manage("delete", "handbook")
        gc.collect()
        assert deleted() is None, "the deleted knowledge base's pipelines are still held"
        service.index("handbook", files=handbook("员工可以远程办公。"))
        again = agentic_rag.ask("员工手册怎么规定的", mode="agent", knowledge_base="handbook")
        assert again.stop_reason == "final_answer"
        assert "远程办公" in again.sources[0]["text"]
    finally:
        service.close()


def test_building_a_cold_knowledge_base_blocks_no_other_request(settings, llm, monkeypatch):
    service = RAGService(settings)
    service.index("warm", files=handbook("员工应当按时上班。"))
    service.index("cold", files=handbook("员工可以远程办公。"))
    service.close()  # both exist on disk, neither is open
    service = RAGService(settings)
    warm = service.rag("warm")
    release, building = threading.Event(), threading.Event()
    real = service_module.AgenticRAG

    class SlowToBuild(real):
        def __init__(self, *args, **kwargs):
            building.set()
            release.wait(30)  # a cold build: the store, its pipelines and their models
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(service_module, "AgenticRAG", SlowToBuild)
    cold = threading.Thread(target=service.rag, args=("cold",))
    cold.start()
    try:
        assert building.wait(10)
        started = time.monotonic()
        assert service.rag("warm") is warm
        assert {kb["name"] for kb in service.knowledge_bases()} >= {"warm", "cold"}
        service.index("warm", files=handbook("员工应当按时上班，迟到要登记。"))
        assert time.monotonic() - started < 5, "a request to a warm knowledge base waited for a cold one's build"
    finally:
        release.set()
        cold.join(60)
        service.close()
    assert not cold.is_alive()


def test_a_knowledge_base_with_out_of_date_bm25_weights_is_reported_when_served(settings, llm, caplog):
    """Found by the answers benchmark: stores written before BM25 weights were stored made keyword search rank
    wrongly, and only the CLI said so. The service now logs it when it loads the knowledge base, and lists it."""
    from document_store.source_manifest import SourceManifest, SourceRecord

    service = RAGService(settings)
    try:
        service.index("handbook", files=handbook("员工应当按时上班。"))
        assert service.knowledge_bases()[0]["stale_weight_sources"] == 0
        manifest = SourceManifest(service.rag("handbook").store)
        record = manifest.all()[0]
        manifest._put(SourceRecord(record.source, record.status, record.content_hash, record.count,
                                   record.updated_at, record.embedding))  # as an older version wrote it
    finally:
        service.close()
    service = RAGService(settings)
    try:
        assert service.knowledge_bases()[0]["stale_weight_sources"] == 1
        with caplog.at_level("WARNING"):
            service.rag("handbook")
        assert "BM25 weights of 1 source(s) are out of date" in caplog.text
        assert "reweight --collection handbook" in caplog.text
    finally:
        service.close()


def test_indexing_in_the_server_shares_the_query_encoder(settings):
    """The server indexes uploads with the encoder its queries use (one ONNX session, not a second spinning one
    for bulk indexing, which would hold another ~135 MiB)."""
    from helpers.text_encoding.onnx_encoder import _shared, shared_encoder
    from pipelines.embedders import model_arguments

    assert settings.embedding_backend == "onnx-int8"
    _shared.cache_clear()
    service = RAGService(settings)
    try:
        service.index("handbook", files=handbook("员工应当按时上班。"))
        found = service.rag("handbook").retrieve("员工什么时候上班")
    finally:
        service.close()
    assert "按时上班" in found.documents[0]["text"]
    assert _shared.cache_info().currsize == 1
    encoder = shared_encoder(model_arguments(settings)["model"])  # the one cached: its size stays 1
    assert _shared.cache_info().currsize == 1 and not encoder.allow_spinning


def test_every_result_of_a_knowledge_base_with_an_interrupted_source_says_so(settings, llm):
    """Issue 46, item 4: only the CLI said that a source was interrupted; API results said nothing. Every result of
    the knowledge base now carries it, in every mode, read when the knowledge base is opened; the interrupted source
    is not also called "embedded with another embedder"; the index run that finishes it clears the warning."""
    from document_store.source_manifest import SourceManifest

    service = RAGService(settings)
    try:
        service.index("handbook", files=handbook("员工应当按时上班。"))
        manifest = SourceManifest(service.rag("handbook").store)
        record, = manifest.all()
        manifest.mark_indexing({record.source: record.content_hash})  # as a run killed while writing it leaves it
    finally:
        service.close()
    service = RAGService(settings)
    api = ChatAPI(service)
    try:
        listed, = service.knowledge_bases()
        assert (listed["incomplete_sources"], listed["stale_sources"]) == (1, 0)
        for mode in ("retrieve", "rag", "agentic", "agent"):
            warning, = api.ask("员工什么时候上班", mode=mode, knowledge_base="handbook").to_dict()["warnings"]
            assert warning.startswith(f"1 source(s) were interrupted during indexing ({record.source})"), mode
            assert "`python -m pipelines index --collection handbook`" in warning
        service.index("handbook", files=handbook("员工应当按时上班。"))
        assert api.ask("员工什么时候上班", mode="retrieve", knowledge_base="handbook").warnings == []
    finally:
        service.close()


def test_as_of_warns_of_a_named_law_held_in_no_version_of_that_day(settings, llm):
    """Issue 46, item 4: asked as of 2020-01-01, a knowledge base holding only the 商标法 in force (from 2027-01-01)
    silently answered from other laws. The result now names the law, the versions held and how to add the others."""
    service = RAGService(settings)
    api = ChatAPI(service)

    def warnings(query: str, as_of: str | None = None, mode: str = "retrieve") -> list[str]:
        return api.ask(query, mode=mode, knowledge_base="laws", as_of=as_of).warnings

    try:
        service.index("laws", laws=["商标法", "个人信息保护法"])
        assert warnings("商标法第十条", "2020-01-01") == [(
            "知识库中没有《中华人民共和国商标法》在 2020-01-01 有效的版本（现有版本自 2027-01-01 起施行）；用 "
            "`python -m pipelines index --laws 商标法 --versions --collection laws` 加入历史版本")]
        both = warnings("个人信息保护法和商标法对此怎么规定", "2020-01-01", mode="rag")
        assert [w.split("》")[0] for w in both] == ["知识库中没有《中华人民共和国个人信息保护法",
                                                   "知识库中没有《中华人民共和国商标法"]
        assert warnings("商标法第十条", "2027-06-01") == []  # the version in force that day is held
        assert warnings("个人信息保护法第十三条", "2022-01-01") == []
        assert warnings("商标法第十条") == []  # no as_of: today's law
    finally:
        service.close()


def test_a_knowledge_base_being_indexed_is_not_deleted_under_the_run(settings, llm):
    """Issue 65: `delete` did not take the index lock, so a delete during an index job closed and removed the store
    the job was writing to. Now it is refused (409 through the API) while the run holds the lock, and works after."""
    from application.service import KnowledgeBaseBusyError

    service = RAGService(settings)
    service.index("handbook", files=handbook("员工应当按时上班。"))
    writing, release = threading.Event(), threading.Event()

    def slow_progress(done: int, total: int) -> None:
        writing.set()
        release.wait(30)

    sources = service.sources(files=[("规章.md", "# 规章\n\n第一条 员工可以远程办公。\n".encode())])
    errors: list[BaseException] = []

    def run() -> None:
        try:
            service.index_sources("handbook", sources, on_progress=slow_progress)
        except BaseException as error:  # noqa: BLE001 - the assertion below reports it
            errors.append(error)

    job = threading.Thread(target=run)
    job.start()
    try:
        assert writing.wait(60)
        try:
            service.delete("handbook")
            raise AssertionError("the knowledge base was deleted while an index run wrote to it")
        except KnowledgeBaseBusyError as busy:
            assert "being indexed" in str(busy)
    finally:
        release.set()
        job.join(60)
    try:
        assert errors == [] and not job.is_alive()
        assert {r["name"]: r["sources"] for r in service.knowledge_bases()}["handbook"] == 2
        service.delete("handbook")
        assert "handbook" not in {r["name"] for r in service.knowledge_bases()}
    finally:
        service.close()
