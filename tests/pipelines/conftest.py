"""Fixtures shared by the query-pipeline tests."""

import pytest

from tests.support.openai_server import ScriptedOpenAIServer


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
