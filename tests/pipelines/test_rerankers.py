"""RERANKER=auto resolves by the LLM in use: no reranker with the embedded 1.5B LLM (neither of its pair readers beat
the fused order: benchmarks/reports/pair_reading.md), the pointwise yes/no reader with its calls concurrent with an
API model; the listwise reader when asked for."""

import dataclasses

import pytest

from components.rankers.llm_listwise_ranker import LLMListwiseRanker
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from config.settings import Settings
from pipelines.retrieval import API_RERANK_WORKERS, make_reranker, reads_llm_logprobs, resolve_reranker


@pytest.fixture
def offline(monkeypatch):
    for name in ("DEEPSEEK_API_KEY", "LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_auto_is_the_default_and_reads_nothing_with_the_embedded_llm(offline, monkeypatch):
    monkeypatch.delenv("RERANKER", raising=False)
    settings = Settings.from_env()
    assert settings.reranker == "auto" and resolve_reranker(settings) == "none"
    assert make_reranker(settings) is None
    assert not reads_llm_logprobs(settings)  # the embedded server keeps no prompt logits


def test_listwise_reads_the_top_n_in_one_call_without_logprobs(offline):
    settings = dataclasses.replace(Settings(), reranker="llm-listwise")
    ranker = make_reranker(settings, top_k=10)
    assert isinstance(ranker, LLMListwiseRanker) and (ranker.top_n, ranker.top_k) == (settings.rerank_top_n, 10)
    assert not reads_llm_logprobs(settings)


def test_auto_scores_pointwise_and_concurrently_with_an_api_model(offline, monkeypatch):
    settings = dataclasses.replace(Settings(), reranker="auto", llm_base_url="http://127.0.0.1:9/v1")
    ranker = make_reranker(settings)
    assert isinstance(ranker, LLMRelevanceRanker) and ranker.max_workers == API_RERANK_WORKERS
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    assert resolve_reranker(dataclasses.replace(Settings(), reranker="auto")) == "llm"


def test_the_embedded_llm_scores_pointwise_one_call_at_a_time_and_with_logprobs(offline):
    settings = dataclasses.replace(Settings(), reranker="llm")
    assert make_reranker(settings).max_workers == 1 and reads_llm_logprobs(settings)


def test_none_builds_no_reranker_and_an_unknown_name_lists_the_choices(offline):
    assert make_reranker(dataclasses.replace(Settings(), reranker="none")) is None
    with pytest.raises(ValueError, match="RERANKER must be one of .*'llm-listwise'"):
        resolve_reranker(dataclasses.replace(Settings(), reranker="colbert"))
