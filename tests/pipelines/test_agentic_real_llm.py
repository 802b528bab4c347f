"""The agentic pipeline with the real embedded LLM (Qwen2.5-Coder-1.5B GGUF via llama.cpp)."""

import pytest

from document_store.qdrant_store import open_document_store
from pipelines.agentic import AgenticRAG
from pipelines.indexing import Indexer, law_sources

PIPL = "中华人民共和国个人信息保护法"


@pytest.mark.slow
def test_sample_question_cites_article_13_or_14(settings, monkeypatch):
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources([PIPL]), progress=False)
    rag = AgenticRAG(store, settings)
    try:
        result = rag.ask("公司收集我的个人信息需要我同意吗")
    finally:
        rag.close()
    keys = {c["key"] for c in result["citations"] if c["type"] == "statute"}
    assert keys & {f"{PIPL}第十三条", f"{PIPL}第十四条"}, result["answer"]
    assert all(c["verified"] for c in result["citations"])
    assert len(result["trace"]["rounds"]) >= 1
    assert result["trace"]["rounds"][0]["queries"][0] == "公司收集我的个人信息需要我同意吗"
    assert result["answer"].strip()
