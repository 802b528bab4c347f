"""`interfaces.startup.StatusGate` in front of a small ASGI app: what answers while the deployments load."""

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from interfaces.preparation import Preparation
from interfaces.startup import ALL_DEPLOYMENTS, Deployments, StatusGate


def gated(deployments: Deployments) -> TestClient:
    app = FastAPI()

    @app.post("/{deployment}/run")
    def run(deployment: str) -> dict:
        return {"result": deployment}

    @app.get("/v1/models")
    def models() -> dict:
        return {"data": [{"id": "agentic_rag"}]}

    @app.get("/status")
    def status() -> dict:
        return {"status": "Up!"}

    app.add_middleware(StatusGate, deployments=deployments)
    return TestClient(app)


def loading(loaded: list[str], now: str | None, preparing: str | None = None) -> Deployments:
    preparation = Preparation(["true"])  # never started: its latest line is what the test says
    preparation.latest = preparing
    deployments = Deployments(Path("serving"), frozenset(ALL_DEPLOYMENTS), on_fatal=lambda: None,
                              preparation=preparation)
    deployments.loaded, deployments.loading = loaded, now
    return deployments


def test_a_loaded_deployment_answers_while_the_next_ones_load():
    """Issue 50: the first request of a cold `serve` is a question; the chat deployment loads first, and its routes
    answer without waiting for `index` and `knowledge_bases`."""
    client = gated(loading(["agentic_rag"], "index"))
    assert client.post("/agentic_rag/run").json() == {"result": "agentic_rag"}
    assert client.get("/v1/models").status_code == 200
    waiting = client.post("/index/run")
    assert waiting.status_code == 503 and waiting.headers["retry-after"] == "5"
    assert waiting.json()["detail"] == "the server is starting (loading index); try again shortly"
    status = client.get("/status")
    assert status.status_code == 503
    assert status.json() == {"status": "Starting", "preparing": None, "pipelines": ["agentic_rag"], "loading": "index",
                             "failed": {}}


def test_nothing_but_status_and_the_page_answers_while_preparing():
    client = gated(loading([], None, preparing="export e5-small to int8 ONNX"))
    for path in ("/agentic_rag/run", "/index/run"):
        waiting = client.post(path)
        assert waiting.status_code == 503
        assert "building what a first answer needs: export e5-small to int8 ONNX" in waiting.json()["detail"]
    assert client.get("/v1/models").status_code == 503
    assert client.get("/status").json()["status"] == "Preparing"


def test_every_route_is_the_apps_own_once_all_are_loaded():
    deployments = loading(list(ALL_DEPLOYMENTS), None)
    deployments.done = True
    client = gated(deployments)
    assert client.get("/status").json() == {"status": "Up!"}
    assert client.post("/index/run").json() == {"result": "index"}


def test_the_preload_beside_the_preparation_runs_at_the_lowest_priority():
    """Issue 50: the preload's imports are needed only once prepare has ended; at the lowest priority they take the
    CPU that prepare leaves idle, not prepare's own (on 2 cores a cold `serve` fell about 5 s behind `run`)."""
    import os
    import sys
    import threading

    from helpers.processes.priority import LOWEST

    seen: list[int] = []
    deployments = Deployments(Path("serving"), frozenset(ALL_DEPLOYMENTS), on_fatal=lambda: None,
                              preparation=Preparation([sys.executable, "-c", "pass"]),
                              preload=lambda: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert deployments.preparation is not None and deployments.prepare(deployments.preparation) is True
    assert seen == ([LOWEST] if sys.platform.startswith("linux") else [own])  # per-thread nice values are Linux's
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own  # the loading thread keeps its own
