"""The ``knowledge_bases`` deployment (serving/knowledge_bases/pipeline_wrapper.py), loaded as Hayhooks loads it, in
process over an empty data folder: its answers and its errors. Listing and deleting indexed knowledge bases over
HTTP is in tests/serving/test_hayhooks_server.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import HTTPException
from hayhooks import BasePipelineWrapper

import application.service as service_module
from application.service import RAGService
from config.settings import Settings

DEPLOYMENT = Path(__file__).resolve().parents[3] / "serving" / "knowledge_bases"


@pytest.fixture
def wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BasePipelineWrapper]:
    from hayhooks.server.utils.module_loader import (
        create_pipeline_wrapper_instance,
        load_pipeline_module,
        unload_pipeline_modules,
    )

    monkeypatch.setattr(service_module, "_service", RAGService(Settings(data_dir=tmp_path,
                                                                        qdrant_path=tmp_path / "qdrant")))
    yield create_pipeline_wrapper_instance(load_pipeline_module("knowledge_bases", DEPLOYMENT))  # runs setup()
    unload_pipeline_modules("knowledge_bases")


def test_the_list_of_an_empty_store_names_the_default(wrapper: BasePipelineWrapper) -> None:
    assert wrapper.run_api() == {"knowledge_bases": [], "default": "statutes"}
    assert wrapper.run_api(action="list", name="ignored") == {"knowledge_bases": [], "default": "statutes"}


def test_the_wrapper_shares_the_process_service(wrapper: BasePipelineWrapper) -> None:
    assert wrapper.api.service is service_module._service


@pytest.mark.parametrize(("action", "name", "status", "detail"), [
    ("drop", "kb", 400, "action must be 'list', 'stats' or 'delete', got 'drop'"),
    ("delete", None, 400, "name is required to delete a knowledge base"),
    ("delete", "", 400, "name is required to delete a knowledge base"),
    ("stats", "", 400, "knowledge_base must be a non-empty name"),
    ("stats", None, 404, "unknown knowledge base 'statutes'"),  # the default, not indexed yet
    ("delete", "handbook", 404, "unknown knowledge base 'handbook'"),
])
def test_bad_requests_are_http_errors_that_say_why(wrapper: BasePipelineWrapper, action: str, name: str | None,
                                                   status: int, detail: str) -> None:
    with pytest.raises(HTTPException) as raised:
        wrapper.run_api(action=action, name=name)
    assert raised.value.status_code == status and str(raised.value.detail).startswith(detail)
