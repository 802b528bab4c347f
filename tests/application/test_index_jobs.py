"""Index jobs (`application.index_jobs`): checked before they are queued, run in the background with progress, kept
on disk, and honest after a stop."""

import json

import pytest

from application.index_jobs import DONE, FAILED, INTERRUPTED, IndexJobs, UnknownJobError
from application.service import RAGService
from document_store.text_files import FileLoadError


def rules(articles: int) -> list[tuple[str, bytes]]:
    body = "\n".join(f"第{i}条 员工应当遵守第{i}项规定。" for i in range(1, articles + 1))
    return [("规章.md", f"# 规章\n{body}\n".encode())]


def test_a_job_runs_in_the_background_reports_its_progress_and_is_kept_on_disk(settings, llm, tmp_path):
    service = RAGService(settings)
    try:
        jobs = IndexJobs(service, tmp_path / "jobs")
        job = jobs.submit("rules", files=rules(150))
        assert job.status in ("queued", "running") and job.sources == ["file:规章.md"]
        done = jobs.wait(job.job_id, timeout=300)
        assert done.status == DONE and done.error is None
        assert done.results == [{"source": "file:规章.md", "action": "added", "count": 150}]
        assert done.progress == {"done": 150, "total": 150, "phase": DONE}
        on_disk = json.loads((tmp_path / "jobs" / f"{job.job_id}.json").read_text(encoding="utf-8"))
        assert on_disk["status"] == DONE and on_disk["results"] == done.results
        assert [j.job_id for j in jobs.recent()] == [job.job_id]
    finally:
        service.close()


def test_bad_input_is_refused_before_a_job_exists(settings, llm, tmp_path):
    service = RAGService(settings)
    jobs = IndexJobs(service, tmp_path / "jobs")
    with pytest.raises(FileLoadError, match="unsupported file type .pdf"):
        jobs.submit("rules", files=[("规章.pdf", "第一条 内容".encode())])
    with pytest.raises(ValueError, match="the same source given twice"):
        jobs.submit("rules", files=rules(1) * 2)
    with pytest.raises(ValueError, match="nothing to index"):
        jobs.submit("rules")
    for blank in ("", "   "):  # issue 63: these indexed into the default knowledge base
        with pytest.raises(ValueError, match="Invalid knowledge base name"):
            jobs.submit(blank, files=rules(1))
    with pytest.raises(ValueError, match="Invalid knowledge base name 'xxxx") as long_name:
        jobs.submit("x" * 300, files=rules(1))
    assert len(str(long_name.value)) < 200  # the name is not echoed in full
    with pytest.raises(UnknownJobError, match="unknown index job 'nope'"):
        jobs.get("nope")
    assert jobs.recent() == [] and list((tmp_path / "jobs").iterdir()) == []


def test_a_failing_job_is_failed_with_its_reason_and_the_worker_goes_on(settings, llm, tmp_path, monkeypatch):
    service = RAGService(settings)
    try:
        jobs = IndexJobs(service, tmp_path / "jobs")
        real = service.index_sources
        calls = []

        def failing_once(*args, **kwargs):
            calls.append(args)
            if len(calls) == 1:
                raise OSError("No space left on device")
            return real(*args, **kwargs)

        monkeypatch.setattr(service, "index_sources", failing_once)
        first = jobs.wait(jobs.submit("rules", files=rules(2)).job_id, timeout=120)
        assert first.status == FAILED and first.error == "No space left on device"
        second = jobs.wait(jobs.submit("rules", files=rules(2)).job_id, timeout=120)
        assert second.status == DONE
    finally:
        service.close()


def test_jobs_a_stopped_server_left_unfinished_are_interrupted_at_the_next_start(settings, llm, tmp_path):
    folder = tmp_path / "jobs"
    folder.mkdir()
    for job_id, status in (("runs", "running"), ("waits", "queued"), ("ended", "done")):
        (folder / f"{job_id}.json").write_text(json.dumps({
            "job_id": job_id, "knowledge_base": "rules", "sources": ["file:规章.md"], "status": status,
            "progress": {"done": 64, "total": 150, "phase": status}}), encoding="utf-8")
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    jobs = IndexJobs(RAGService(settings), folder)
    assert jobs.get("runs").status == jobs.get("waits").status == INTERRUPTED
    assert "again to resume" in jobs.get("runs").error and jobs.get("runs").progress["done"] == 64
    assert jobs.get("ended").status == DONE and jobs.get("ended").error is None
    assert json.loads((folder / "runs.json").read_text(encoding="utf-8"))["status"] == INTERRUPTED


def test_a_job_stopped_with_the_server_is_resumed_once_from_its_kept_request(settings, llm, tmp_path):
    """Nothing is lost when the server stops during a job: its request (the uploaded bytes) is kept beside it, the
    next start queues it again, and it finishes; a job stopped a second time is not resumed again (a crash it causes
    would otherwise repeat at every start)."""
    service = RAGService(settings)
    try:
        folder = tmp_path / "jobs"
        first = IndexJobs(service, folder)
        job = first.wait(first.submit("rules", files=rules(3)).job_id, timeout=120)
        assert job.status == DONE and not (folder / f"{job.job_id}.request").exists()  # forgotten once ended
        stopped = job.to_dict() | {"job_id": "stopped", "status": "running", "results": [], "resumed": 0}
        (folder / "stopped.json").write_text(json.dumps(stopped), encoding="utf-8")
        first._keep_request("stopped", [], rules(5))
        twice = stopped | {"job_id": "twice", "resumed": 1}
        (folder / "twice.json").write_text(json.dumps(twice), encoding="utf-8")
        first._keep_request("twice", [], rules(5))
        (folder / "orphan.request").mkdir()  # a request whose job file was never written
        again = IndexJobs(service, folder)
        resumed = again.wait("stopped", timeout=120)
        assert resumed.status == DONE and resumed.resumed == 1
        assert resumed.results == [{"source": "file:规章.md", "action": "replaced", "count": 5}]
        assert again.get("twice").status == INTERRUPTED and "after it had been resumed" in again.get("twice").error
        assert sorted(p.name for p in folder.iterdir()) == sorted(f"{j}.json" for j in (job.job_id, "stopped", "twice"))
    finally:
        service.close()
