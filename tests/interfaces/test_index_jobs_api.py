"""``GET /index/jobs`` and ``GET /index/jobs/{job_id}`` (`interfaces.index_jobs_api`) in process, over jobs kept on
disk by an earlier server. Jobs run by a real server are in tests/serving/test_hayhooks_server.py and
test_index_jobs_server.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import application.index_jobs as index_jobs_module
from application.index_jobs import IndexJob, IndexJobs
from application.service import RAGService
from config.settings import Settings
from interfaces.index_jobs_api import add_index_job_routes


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    """25 ended jobs on disk, ``job-00`` the oldest, ``job-24`` the newest (``job-03`` failed)."""
    folder = tmp_path / "index_jobs"
    folder.mkdir()
    for number in range(25):
        job = IndexJob(job_id=f"job-{number:02d}", knowledge_base="kb", sources=[f"law:法{number}"],
                       status="failed" if number == 3 else "done", error="No space left" if number == 3 else None,
                       created_at=1_700_000_000 + number, updated_at=1_700_000_000 + number)
        (folder / f"{job.job_id}.json").write_text(json.dumps(job.to_dict()), encoding="utf-8")
    service = RAGService(Settings(data_dir=tmp_path, qdrant_path=tmp_path / "qdrant"))
    monkeypatch.setattr(index_jobs_module, "_jobs", IndexJobs(service, folder))  # what `get_index_jobs` gives
    app = FastAPI()
    add_index_job_routes(app)
    return TestClient(app)


def test_the_newest_jobs_come_first_twenty_by_default(client: TestClient) -> None:
    jobs = client.get("/index/jobs").json()["jobs"]
    assert [job["job_id"] for job in jobs] == [f"job-{n:02d}" for n in range(24, 4, -1)]
    assert [job["job_id"] for job in client.get("/index/jobs", params={"limit": 2}).json()["jobs"]] == [
        "job-24", "job-23"]
    assert len(client.get("/index/jobs", params={"limit": 200}).json()["jobs"]) == 25


@pytest.mark.parametrize("limit", [0, -1, 201])
def test_a_limit_out_of_range_is_a_400_that_says_the_range(client: TestClient, limit: int) -> None:
    response = client.get("/index/jobs", params={"limit": limit})
    assert response.status_code == 400
    assert response.json() == {"detail": f"limit must be between 1 and 200, got {limit}"}


def test_a_limit_that_is_no_number_is_refused(client: TestClient) -> None:
    assert client.get("/index/jobs", params={"limit": "all"}).status_code == 422


def test_one_job_reads_its_state(client: TestClient) -> None:
    job = client.get("/index/jobs/job-03").json()
    assert job == {"job_id": "job-03", "knowledge_base": "kb", "sources": ["law:法3"], "status": "failed",
                   "progress": {"done": 0, "total": 0, "phase": "queued"}, "results": [],
                   "error": "No space left", "resumed": 0, "created_at": 1_700_000_003,
                   "updated_at": 1_700_000_003}


def test_an_unknown_job_is_a_404_naming_it(client: TestClient) -> None:
    response = client.get("/index/jobs/nope")
    assert response.status_code == 404 and response.json() == {"detail": "unknown index job 'nope'"}
