"""Index requests as jobs: accepted at once, run one at a time in the background, followed by their progress.

An upload of a few thousand articles takes minutes on 2 cores: longer than any client or proxy waits for one
request. `IndexJobs.submit` checks the request (the laws exist, the files are UTF-8 .txt/.md) and returns a job at
once; a worker thread indexes it, reporting the articles written so far. Each job's state is a JSON file in
``<DATA_DIR>/index_jobs/``, replaced atomically (written beside, fsync'd, renamed), so a killed server leaves every
job readable; its request (law names, uploaded files) is kept beside it until the job ends. A job that was queued or
running when the server stopped is queued again at the next start and resumes where the store's manifest says it
stopped; one interrupted a second time is marked ``interrupted`` (a crash it causes does not repeat at every start):
its sources stay marked incomplete in the knowledge base (searches say so), and indexing the same laws or files
again resumes them.

Usage::

    jobs = IndexJobs(service, settings.data_dir / "index_jobs")
    job = jobs.submit("my_kb", laws=None, files=[("手册.md", data)])
    jobs.get(job.job_id).progress   # {"done": 256, "total": 4794, "phase": "indexing"}
    jobs.wait(job.job_id)           # the finished job
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from haystack import logging

from application.service import RAGService, get_service
from pipelines.indexing import Source

logger = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED, INTERRUPTED = "queued", "running", "done", "failed", "interrupted"
ENDED = (DONE, FAILED, INTERRUPTED)
SAVE_EVERY_SECONDS = 0.5  # progress is written at most this often
KEEP_JOBS = 200  # job files kept; older ended ones are removed
MAX_RESUMES = 1  # times a job interrupted by a server stop is resumed at the next start


class UnknownJobError(KeyError):
    """No job has this id."""

    def __str__(self) -> str:
        return f"unknown index job {self.args[0]!r}"


@dataclass
class IndexJob:
    """One index request and its state (the JSON of ``GET /index/jobs/{job_id}``)."""

    job_id: str
    knowledge_base: str
    sources: list[str]
    status: str = QUEUED
    progress: dict[str, Any] = field(default_factory=lambda: {"done": 0, "total": 0, "phase": "queued"})
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    resumed: int = 0  # times it was resumed after a server stop
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class IndexJobs:
    """The server's index jobs: submitted from request threads, run by one worker thread, kept on disk.

    Lifetime: one per server process (`interfaces.index_jobs_api`); the worker starts with the first job."""

    def __init__(self, service: RAGService, folder: Path) -> None:
        self.service = service
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._jobs: dict[str, IndexJob] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[IndexJob, list[Source]]] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._ended = threading.Condition(self._lock)
        self._load()

    def _load(self) -> None:
        """Read the jobs on disk; one that never ended was stopped with the server: queued again if its request
        was kept and it was not resumed before, else `INTERRUPTED`."""
        for path in sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime):
            try:
                job = IndexJob(**json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as error:
                logger.warning("Unreadable index job file {path}: {error}", path=str(path), error=str(error))
                continue
            self._jobs[job.job_id] = job
            if job.status not in ENDED:
                self._resume(job)
        for folder in self.folder.glob("*.request"):  # a request whose job ended, or was never saved
            job_id = folder.name.removesuffix(".request")
            if job_id not in self._jobs or self._jobs[job_id].status in ENDED:
                self._forget_request(job_id)

    def _resume(self, job: IndexJob) -> None:
        request = self._request(job.job_id)
        if request is None or job.resumed >= MAX_RESUMES:
            job.status, job.progress["phase"] = INTERRUPTED, INTERRUPTED
            job.error = ("the server stopped before this job ended" + (" again, after it had been resumed"
                         if job.resumed else "") + "; its sources are marked incomplete: index the same laws or "
                         "files again to resume them")
            self._save(job)
            self._forget_request(job.job_id)
            logger.warning("Index job {job_id} was interrupted by a server stop", job_id=job.job_id)
            return
        try:
            sources = self.service.sources(*request)
        except ValueError as error:  # the statute database no longer has a law, say
            job.status, job.error = FAILED, reason(error)
            self._save(job)
            self._forget_request(job.job_id)
            return
        job.status, job.resumed, job.progress = QUEUED, job.resumed + 1, {"done": 0, "total": 0, "phase": QUEUED}
        self._save(job)
        self._enqueue(job, sources)
        logger.warning("Index job {job_id} was stopped with the server; resuming it", job_id=job.job_id)

    def submit(self, knowledge_base: str, laws: list[str] | None = None,
               files: list[tuple[str, bytes]] | None = None) -> IndexJob:
        """Check the request (bad input raises the service's one-line errors) and queue it; returns the job."""
        sources = self.service.sources(laws, files)
        name = self.service.checked_name(knowledge_base)
        job = IndexJob(job_id=uuid.uuid4().hex[:16], knowledge_base=name, sources=[s.name for s in sources])
        self._keep_request(job.job_id, laws or [], files or [])
        with self._lock:
            self._jobs[job.job_id] = job
            self._save(job)
            self._prune()
            queued = IndexJob(**asdict(job))  # as submitted: the worker may start it before this returns
        self._enqueue(job, sources)
        logger.info("Index job {job_id} queued: {count} source(s) into {kb}", job_id=job.job_id,
                    count=len(sources), kb=name)
        return queued

    def _enqueue(self, job: IndexJob, sources: list[Source]) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, daemon=True, name="index-jobs")
            self._worker.start()
        self._queue.put((job, sources))

    def _request_dir(self, job_id: str) -> Path:
        return self.folder / f"{job_id}.request"

    def _keep_request(self, job_id: str, laws: list[str], files: list[tuple[str, bytes]]) -> None:
        """Write the request beside the job (fsync'd) so that a job stopped with the server can be resumed."""
        folder = self._request_dir(job_id)
        folder.mkdir()
        for number, (_, data) in enumerate(files):
            _write_synced(folder / f"{number}.bin", data)
        names = {"laws": laws, "files": [name for name, _ in files]}
        _write_synced(folder / "request.json", json.dumps(names, ensure_ascii=False).encode())

    def _request(self, job_id: str) -> tuple[list[str], list[tuple[str, bytes]]] | None:
        """The kept request of a job (its laws and files), or None when it is gone or incomplete."""
        folder = self._request_dir(job_id)
        try:
            names = json.loads((folder / "request.json").read_text(encoding="utf-8"))
            files = [(name, (folder / f"{number}.bin").read_bytes()) for number, name in enumerate(names["files"])]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return list(names["laws"]), files

    def _forget_request(self, job_id: str) -> None:
        shutil.rmtree(self._request_dir(job_id), ignore_errors=True)

    def get(self, job_id: str) -> IndexJob:
        with self._lock:
            if job_id not in self._jobs:
                raise UnknownJobError(job_id)
            return IndexJob(**asdict(self._jobs[job_id]))

    def recent(self, limit: int = 20) -> list[IndexJob]:
        """The newest jobs first."""
        with self._lock:
            jobs = sorted(self._jobs.values(), key=lambda j: j.created_at, reverse=True)[:limit]
            return [IndexJob(**asdict(job)) for job in jobs]

    def wait(self, job_id: str, timeout: float | None = None) -> IndexJob:
        """Block until the job has ended (or ``timeout`` seconds passed); returns its state."""
        self.get(job_id)  # an unknown id raises `UnknownJobError`
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._ended:
            while self._jobs[job_id].status not in ENDED:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._ended.wait(left)
        return self.get(job_id)

    def _work(self) -> None:
        while True:
            job, sources = self._queue.get()
            self._run(job, sources)

    def _run(self, job: IndexJob, sources: list[Source]) -> None:
        last_save = 0.0

        def on_progress(done: int, total: int) -> None:
            nonlocal last_save
            with self._lock:
                job.progress = {"done": done, "total": total, "phase": "indexing"}
                if time.monotonic() - last_save >= SAVE_EVERY_SECONDS or done == total:
                    last_save = time.monotonic()
                    self._save(job)

        with self._lock:
            job.status, job.progress["phase"] = RUNNING, "preparing"
            self._save(job)
        try:
            results = self.service.index_sources(job.knowledge_base, sources, on_progress=on_progress)
        except Exception as error:
            logger.exception("Index job {job_id} failed", job_id=job.job_id)
            final = {"status": FAILED, "error": reason(error)}
        else:
            final = {"status": DONE, "results": results}
        with self._ended:
            for key, value in final.items():
                setattr(job, key, value)
            job.progress["phase"] = job.status
            self._save(job)
            self._forget_request(job.job_id)
            self._ended.notify_all()
        logger.info("Index job {job_id} {status}", job_id=job.job_id, status=job.status)

    def _save(self, job: IndexJob) -> None:
        """Replace the job's file atomically (callers hold the lock, or own the job alone)."""
        job.updated_at = time.time()
        path = self.folder / f"{job.job_id}.json"
        temporary = path.with_suffix(".tmp")
        _write_synced(temporary, json.dumps(job.to_dict(), ensure_ascii=False).encode())
        temporary.replace(path)

    def _prune(self) -> None:
        ended = sorted((j for j in self._jobs.values() if j.status in ENDED), key=lambda j: j.created_at)
        for job in ended[:max(0, len(self._jobs) - KEEP_JOBS)]:
            (self.folder / f"{job.job_id}.json").unlink(missing_ok=True)
            del self._jobs[job.job_id]


def reason(error: BaseException) -> str:
    """A failed job's error: the exception's message on one line (its type when it has none)."""
    return " ".join(str(error).split())[:500] or type(error).__name__


def _write_synced(path: Path, data: bytes) -> None:
    with path.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())



# The process's jobs. Lifetime: created by the first index request or job read, alive until the process ends.
_jobs: IndexJobs | None = None
_jobs_lock = threading.Lock()


def get_index_jobs() -> IndexJobs:
    """The process-wide index jobs, over the process-wide service (``<DATA_DIR>/index_jobs``)."""
    global _jobs
    with _jobs_lock:
        if _jobs is None:
            service = get_service()
            _jobs = IndexJobs(service, service.settings.data_dir / "index_jobs")
        return _jobs
