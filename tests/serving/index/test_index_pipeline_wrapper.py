"""The ``index`` deployment (serving/index/pipeline_wrapper.py), loaded as Hayhooks loads it, in process: what its
setup does to jobs a stopped server left, how it reads the uploads, and what it refuses before a job exists. Index
jobs over HTTP are in tests/serving/test_hayhooks_server.py and test_index_jobs_server.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import HTTPException, UploadFile
from hayhooks import BasePipelineWrapper

import application.index_jobs as index_jobs_module
import application.service as service_module
from application.index_jobs import INTERRUPTED, IndexJob
from application.service import RAGService
from config.settings import Settings

DEPLOYMENT = Path(__file__).resolve().parents[3] / "serving" / "index"
HANDBOOK = "# 员工手册\n第一条 员工应当遵守考勤制度。\n第二条 年休假按国家规定执行。\n".encode()


@pytest.fixture
def service(settings: Settings, llm: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[RAGService]:
    """The process's service and index jobs over this test's data folder."""
    served = RAGService(settings)
    monkeypatch.setattr(service_module, "_service", served)
    monkeypatch.setattr(index_jobs_module, "_jobs", None)  # `get_index_jobs` makes them over this service
    yield served
    served.close()


def load() -> BasePipelineWrapper:
    from hayhooks.server.utils.module_loader import create_pipeline_wrapper_instance, load_pipeline_module

    return create_pipeline_wrapper_instance(load_pipeline_module("index", DEPLOYMENT))  # runs setup()


@pytest.fixture
def wrapper(service: RAGService) -> Iterator[BasePipelineWrapper]:
    from hayhooks.server.utils.module_loader import unload_pipeline_modules

    yield load()
    unload_pipeline_modules("index")


def upload(name: str | None, data: bytes) -> UploadFile:
    return UploadFile(file=io.BytesIO(data), filename=name)


def test_setup_marks_the_jobs_a_stopped_server_left_unfinished(service: RAGService) -> None:
    """At the deployment's load, not at the first index request: ``GET /index/jobs`` is right from the start."""
    from hayhooks.server.utils.module_loader import unload_pipeline_modules

    folder = service.settings.data_dir / "index_jobs"
    folder.mkdir(parents=True)
    left = IndexJob(job_id="left", knowledge_base="kb", sources=["law:民法典"], status="running")
    (folder / "left.json").write_text(json.dumps(left.to_dict()), encoding="utf-8")
    try:
        load()
        on_disk = json.loads((folder / "left.json").read_text(encoding="utf-8"))
        assert on_disk["status"] == INTERRUPTED and "the server stopped before this job ended" in on_disk["error"]
    finally:
        unload_pipeline_modules("index")


def test_uploads_are_indexed_as_a_job_and_waited_for(wrapper: BasePipelineWrapper) -> None:
    done = wrapper.run_api(knowledge_base="handbook", files=[upload("员工手册.md", HANDBOOK)], wait=True)
    assert done["status"] == "done" and done["knowledge_base"] == "handbook"
    assert done["status_url"] == f"/index/jobs/{done['job_id']}"
    assert done["results"] == [{"source": "file:员工手册.md", "action": "added", "count": 2}]


def test_an_upload_without_a_name_is_indexed_as_upload_txt(wrapper: BasePipelineWrapper) -> None:
    done = wrapper.run_api(knowledge_base="notes", files=[upload(None, "第一条 记录内容。".encode())], wait=True)
    assert done["results"] == [{"source": "file:upload.txt", "action": "added", "count": 1}]


@pytest.mark.parametrize(("laws", "files", "detail"), [
    (None, [], "nothing to index: give laws and/or files"),
    (None, [upload("规章.pdf", "第一条 内容".encode())], "unsupported file type .pdf"),
    (["没有这部法律"], None, "没有这部法律"),
])
def test_a_request_that_cannot_be_indexed_is_a_400_and_no_job(wrapper: BasePipelineWrapper, service: RAGService,
                                                               laws: list[str] | None, files: list[UploadFile] | None,
                                                               detail: str) -> None:
    with pytest.raises(HTTPException) as raised:
        wrapper.run_api(knowledge_base="kb", laws=laws, files=files)
    assert raised.value.status_code == 400 and detail in str(raised.value.detail)
    assert index_jobs_module.get_index_jobs().recent() == []
