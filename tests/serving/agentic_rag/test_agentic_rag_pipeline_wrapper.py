"""The ``agentic_rag`` deployment (serving/agentic_rag/pipeline_wrapper.py), loaded as Hayhooks loads it, in process
over a small knowledge base and the scripted LLM: what ``run_api`` and the chat method give back. Every mode, bad
input and streaming over HTTP are in tests/serving/test_hayhooks_server.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import HTTPException
from hayhooks import BasePipelineWrapper

import application.service as service_module
from application.service import RAGService
from config.settings import Settings
from harness.llm_script import ANSWERER
from harness.openai_server import ScriptedOpenAIServer

DEPLOYMENT = Path(__file__).resolve().parents[3] / "serving" / "agentic_rag"
HANDBOOK = "# 员工手册\n第一条 员工应当遵守考勤制度。\n第二条 加班应当支付加班费。\n".encode()
ANSWER = "应当支付。依据《员工手册》第二条，加班应当支付加班费。"


@dataclass
class Deployed:
    wrapper: BasePipelineWrapper
    service: RAGService
    llm: ScriptedOpenAIServer


def load() -> BasePipelineWrapper:
    from hayhooks.server.utils.module_loader import create_pipeline_wrapper_instance, load_pipeline_module

    return create_pipeline_wrapper_instance(load_pipeline_module("agentic_rag", DEPLOYMENT))  # runs setup()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, e5_model: Path) -> Iterator[Deployed]:
    """The deployment over a data folder holding only the ``handbook`` knowledge base (no default one)."""
    from hayhooks.server.utils.module_loader import unload_pipeline_modules

    data = tmp_path_factory.mktemp("agentic_rag") / "data"
    with ScriptedOpenAIServer(default="好的") as llm, pytest.MonkeyPatch.context() as patch:
        llm.add_rule(ANSWERER, ANSWER)
        for name in ("DEEPSEEK_API_KEY", "SERPAPI_API_KEY", "SERPAPI_BASE_URL", "LLM_LIGHT_MODEL", "QDRANT_URL"):
            patch.delenv(name, raising=False)
        for name, value in {"DATA_DIR": str(data), "EMBEDDING_MODEL": str(e5_model), "LLM_BASE_URL": llm.base_url,
                            "LLM_TIMEOUT": "2", "LLM_MAX_RETRIES": "0"}.items():
            patch.setenv(name, value)
        service = RAGService(Settings.from_env())
        patch.setattr(service_module, "_service", service)
        try:
            wrapper = load()  # the default knowledge base does not exist: the load goes on (a warning)
            service.index("handbook", files=[("员工手册.md", HANDBOOK)])
            yield Deployed(wrapper, service, llm)
        finally:
            unload_pipeline_modules("agentic_rag")
            service.close()


def test_a_question_to_the_missing_default_knowledge_base_is_a_404(deployed: Deployed) -> None:
    with pytest.raises(HTTPException) as raised:
        deployed.wrapper.run_api(query="加班费怎么算", mode="retrieve")
    assert raised.value.status_code == 404
    assert str(raised.value.detail) == "unknown knowledge base 'statutes'; existing: handbook"


def test_retrieve_gives_the_ranked_articles_as_plain_json(deployed: Deployed) -> None:
    result = deployed.wrapper.run_api(query="加班费怎么算", mode="retrieve", top_k=1, knowledge_base="handbook")
    assert isinstance(result, dict) and json.loads(json.dumps(result, ensure_ascii=False)) == result
    assert [document["key"] for document in result["documents"]] == ["员工手册第二条"]
    assert result["mode"] == "retrieve" and result["answer_id"] is None  # a search is no answer to give feedback on


def test_an_answer_has_an_id_that_feedback_can_name(deployed: Deployed) -> None:
    result = deployed.wrapper.run_api(query="加班费怎么算", mode="rag", knowledge_base="handbook")
    assert result["answer"].startswith("应当支付") and result["knowledge_base"] == "handbook"
    remembered = deployed.service.answers.get(result["answer_id"])
    assert remembered.question == "加班费怎么算" and "员工手册第二条" in remembered.evidence


def test_a_non_streamed_chat_completion_is_the_answer_with_its_answer_id(deployed: Deployed) -> None:
    completion = asyncio.run(deployed.wrapper.run_chat_completion_async(
        "agentic_rag", [{"role": "user", "content": "加班的工资怎么算"}],
        {"mode": "rag", "knowledge_base": "handbook"}))
    assert completion.choices[0].message.content.startswith("应当支付")
    assert deployed.service.answers.get(completion.id).question == "加班的工资怎么算"


@pytest.mark.parametrize(("arguments", "detail"), [
    ({"top_k": 0}, "top_k must be an integer between 1 and 50, got 0"),
    ({"mode": "magic"}, "mode"),
    ({"knowledge_base": ""}, "knowledge_base must be a non-empty name"),
])
def test_bad_arguments_are_a_400_before_any_llm_call(deployed: Deployed, arguments: dict, detail: str) -> None:
    calls = len(deployed.llm.requests)
    with pytest.raises(HTTPException) as raised:
        deployed.wrapper.run_api(**{"query": "加班费怎么算", "knowledge_base": "handbook", **arguments})
    assert raised.value.status_code == 400 and detail in str(raised.value.detail)
    assert len(deployed.llm.requests) == calls
