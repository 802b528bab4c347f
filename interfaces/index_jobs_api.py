"""``GET /index/jobs`` and ``GET /index/jobs/{job_id}``: the index jobs that ``POST /index/run`` queues.

A job reads ``{"job_id", "knowledge_base", "sources", "status": queued|running|done|failed|interrupted,
"progress": {"done", "total", "phase"}, "results", "error", "created_at", "updated_at"}``; ``done`` and ``total`` count
articles. Behind the same bearer authentication as every other API route.

Usage::

    add_index_job_routes(app)
    httpx.get(f"{base}/index/jobs/{job_id}").json()["progress"]
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.concurrency import run_in_threadpool

from application.index_jobs import UnknownJobError, get_index_jobs


def add_index_job_routes(app: FastAPI) -> None:
    @app.get("/index/jobs", tags=["index"], summary="The newest index jobs")
    async def index_jobs(limit: int = 20) -> dict[str, Any]:
        if not 1 <= limit <= 200:
            raise HTTPException(400, f"limit must be between 1 and 200, got {limit}")
        jobs = await run_in_threadpool(get_index_jobs)
        return {"jobs": [job.to_dict() for job in jobs.recent(limit)]}

    @app.get("/index/jobs/{job_id}", tags=["index"], summary="An index job: its progress, results or error")
    async def index_job(job_id: str) -> dict[str, Any]:
        jobs = await run_in_threadpool(get_index_jobs)
        try:
            return jobs.get(job_id).to_dict()
        except UnknownJobError as error:
            raise HTTPException(404, str(error)) from error
