"""Fixtures shared by the query-pipeline tests."""

import pytest

from config.settings import Settings
from harness.openai_server import ScriptedOpenAIServer
from pipelines.indexing import Indexer, law_sources
from pipelines.stores import open_document_store

PIPL = "中华人民共和国个人信息保护法"


@pytest.fixture(scope="module")
def pipl_store(tmp_path_factory, e5_model):
    """A store holding the 个人信息保护法 (74 articles), shared by one test module."""
    settings = Settings(qdrant_path=tmp_path_factory.mktemp("store") / "qdrant", embedding_model=str(e5_model))
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources([PIPL]), progress=False)
    yield store
    store.close()


@pytest.fixture
def llm(monkeypatch):
    """The scripted OpenAI-compatible server as the LLM (no DeepSeek, no SerpAPI key, 2 s timeout, no retries)."""
    with ScriptedOpenAIServer(default="好的") as server:
        for name in ("DEEPSEEK_API_KEY", "SERPAPI_API_KEY", "SERPAPI_BASE_URL", "LLM_LIGHT_MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_TIMEOUT", "2")
        monkeypatch.setenv("LLM_MAX_RETRIES", "0")
        yield server
