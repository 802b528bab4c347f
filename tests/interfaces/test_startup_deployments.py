"""`interfaces.startup`: the deployments load one at a time after the server listens, a failure is recorded with its
reason (and stops the server when the deployment is required), and `StatusGate` says so. Loaded here from a
``serving/`` folder of small wrappers into a bare FastAPI app; what answers while they load is in
tests/serving/test_status_gate.py, the real server in tests/serving/test_startup.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from interfaces.preparation import Preparation
from interfaces.startup import (
    ALL_DEPLOYMENTS,
    CHAT_DEPLOYMENT,
    PREPARE,
    Deployments,
    StatusGate,
    one_line,
    required_deployments,
    routes_of,
)

WRAPPER = '''
from hayhooks import BasePipelineWrapper


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        {setup}

    def run_api(self, query: str = "") -> dict:
        return {{"deployment": "{name}"}}
'''


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[Path]:
    """A serving/ folder whose wrappers load in no time; a test makes one fail. Hayhooks' registry is left empty."""
    from hayhooks.server.pipelines.registry import registry
    from hayhooks.server.utils.module_loader import unload_pipeline_modules

    for name in ALL_DEPLOYMENTS:
        write_wrapper(tmp_path, name)
    yield tmp_path
    for name in ALL_DEPLOYMENTS:
        registry.remove(name)
        unload_pipeline_modules(name)


def write_wrapper(serving: Path, name: str, setup: str = "pass") -> None:
    (serving / name).mkdir(exist_ok=True)
    (serving / name / "pipeline_wrapper.py").write_text(WRAPPER.format(setup=setup, name=name), encoding="utf-8")


def gated(deployments: Deployments) -> tuple[FastAPI, TestClient]:
    app = FastAPI()
    app.add_middleware(StatusGate, deployments=deployments)
    return app, TestClient(app)


def test_every_deployment_loads_in_order_and_then_answers(serving: Path) -> None:
    fatal: list[bool] = []
    deployments = Deployments(serving, frozenset(ALL_DEPLOYMENTS), on_fatal=lambda: fatal.append(True))
    app, client = gated(deployments)
    assert client.post("/index/run", json={}).status_code == 503  # before: starting
    deployments.load(app)
    assert deployments.loaded == list(ALL_DEPLOYMENTS) and deployments.loaded[0] == CHAT_DEPLOYMENT
    assert deployments.healthy and deployments.loading is None and fatal == []
    for name in ALL_DEPLOYMENTS:
        answer = client.post(f"/{name}/run", json={"query": "问"})
        assert answer.status_code == 200 and answer.json()["result"] == {"deployment": name}


def test_an_optional_deployment_that_fails_is_reported_and_the_others_load(serving: Path) -> None:
    write_wrapper(serving, "index", 'raise OSError("the disk\\n   is full")')
    fatal: list[bool] = []
    deployments = Deployments(serving, frozenset({CHAT_DEPLOYMENT}), on_fatal=lambda: fatal.append(True))
    app, client = gated(deployments)
    deployments.load(app)
    assert deployments.loaded == ["agentic_rag", "knowledge_bases"] and list(deployments.failed) == ["index"]
    reason = deployments.failed["index"]
    assert "the disk is full" in reason and "\n" not in reason and len(reason) <= 300
    assert deployments.done and not deployments.healthy and not deployments.fatal and fatal == []
    status = client.get("/status")
    assert status.status_code == 503
    assert status.json() == {"status": "Degraded", "preparing": None, "pipelines": ["agentic_rag", "knowledge_bases"],
                             "loading": None, "failed": {"index": reason}}
    refused = client.post("/index/run", json={})
    assert refused.status_code == 503 and "retry-after" not in refused.headers  # it will not load: no retry
    assert refused.json() == {"detail": f"index is not available: it failed to load ({reason})"}
    assert client.post("/knowledge_bases/run", json={}).json()["result"] == {"deployment": "knowledge_bases"}


def test_a_required_deployment_that_fails_stops_the_server_and_the_loading(serving: Path) -> None:
    write_wrapper(serving, "agentic_rag", 'raise RuntimeError("no model")')
    fatal: list[bool] = []
    deployments = Deployments(serving, frozenset(ALL_DEPLOYMENTS), on_fatal=lambda: fatal.append(True))
    deployments.load(FastAPI())
    assert fatal == [True] and deployments.fatal and not deployments.done
    assert deployments.loaded == [] and list(deployments.failed) == ["agentic_rag"]  # index was never tried
    assert "no model" in deployments.failed["agentic_rag"]
    assert deployments.status()["status"] == "Failed" and deployments.status()["loading"] is None


def test_a_failed_preparation_stops_the_server_before_any_deployment_loads(serving: Path) -> None:
    fatal: list[bool] = []
    preloaded: list[bool] = []
    preparation = Preparation([sys.executable, "-c", "print('building the index'); raise SystemExit(4)"])
    deployments = Deployments(serving, frozenset(), on_fatal=lambda: fatal.append(True), preparation=preparation,
                              preload=lambda: preloaded.append(True))
    deployments.load(FastAPI())
    assert fatal == [True] and deployments.fatal and deployments.loaded == []
    assert list(deployments.failed) == [PREPARE]
    assert "exited with 4; its last line: building the index" in deployments.failed[PREPARE]
    assert deployments.status()["status"] == "Failed"


def test_a_preparation_that_succeeds_is_followed_by_the_deployments(serving: Path) -> None:
    preparation = Preparation([sys.executable, "-c", "pass"])
    deployments = Deployments(serving, frozenset(ALL_DEPLOYMENTS), on_fatal=lambda: None, preparation=preparation)
    deployments.load(FastAPI())
    assert deployments.healthy and deployments.preparing is None  # its latest line is cleared when it ends


def test_the_status_body_names_the_state() -> None:
    deployments = Deployments(Path("serving"), frozenset(), on_fatal=lambda: None)
    assert deployments.status() == {"status": "Starting", "preparing": None, "pipelines": [], "loading": None,
                                     "failed": {}}
    deployments.loading = "index"
    assert deployments.status()["loading"] == "index"
    deployments.done = True
    assert deployments.healthy and deployments.status()["status"] == "Degraded"  # read only when not healthy


def test_the_page_and_non_http_scopes_pass_while_starting() -> None:
    deployments = Deployments(Path("serving"), frozenset(), on_fatal=lambda: None)
    app, _ = gated(deployments)
    seen: list[str] = []

    @app.get("/ui/")
    @app.get("/favicon.ico")
    @app.get("/")
    def page() -> dict[str, bool]:
        return {"page": True}

    @app.on_event("startup")
    def started() -> None:
        seen.append("lifespan")

    with TestClient(app) as client:  # the lifespan scope reaches the app
        for path in ("/", "/ui/", "/favicon.ico"):
            assert client.get(path).json() == {"page": True}, path
        waiting = client.get("/docs")
        assert waiting.status_code == 503 and waiting.json()["detail"] == (
            "the server is starting (loading …); try again shortly")
    assert seen == ["lifespan"]


def test_the_chat_deployment_also_serves_the_openai_routes() -> None:
    assert routes_of("agentic_rag") == ("/agentic_rag/", "/v1/chat/completions", "/chat/completions", "/v1/models",
                                        "/models")
    assert routes_of("index") == ("/index/",)


def test_required_deployments_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUIRED_DEPLOYMENTS", raising=False)
    assert required_deployments() == frozenset(ALL_DEPLOYMENTS)
    monkeypatch.setenv("REQUIRED_DEPLOYMENTS", "agentic_rag, index")
    assert required_deployments() == frozenset({"agentic_rag", "index"})
    monkeypatch.setenv("REQUIRED_DEPLOYMENTS", "agentic_rag,chat,zz")
    with pytest.raises(ValueError, match="REQUIRED_DEPLOYMENTS names unknown deployments: chat, zz; known: "
                                         "agentic_rag, index, knowledge_bases"):
        required_deployments()


@pytest.mark.parametrize(("error", "line"), [
    (RuntimeError("model\n   missing"), "RuntimeError: model missing"),
    (KeyError(), "KeyError: KeyError"),
    (ValueError("x" * 400), ("ValueError: " + "x" * 400)[:300]),
])
def test_a_failure_is_one_line_with_its_type(error: BaseException, line: str) -> None:
    assert one_line(error) == line
