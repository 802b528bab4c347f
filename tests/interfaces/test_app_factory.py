"""`interfaces.app_factory`: the server app as `create_server_app` assembles it, in process and without loading the
deployments (the lifespan is not run): Hayhooks' settings, the order of the middlewares, the page routes, CORS and
the wiring of a preparation to the server's stop. The real server is in tests/serving/."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from config.settings import Settings
from interfaces.app_factory import PROJECT_LOGGERS, ROOT, configure_hayhooks, create_server_app
from interfaces.preparation import Preparation
from pipelines.yaml_export import ALLOWLIST_ENV

KEY = {"Authorization": "Bearer key-1"}
HAYHOOKS_SETTINGS = ("pipelines_dir", "additional_python_path", "startup_deploy_strategy", "intercepted_loggers",
                     "tracing_enabled", "tracing_include_haystack_spans", "monitoring_enabled", "cors_allow_origins")
ALLOWLIST = "HAYSTACK_DESERIALIZATION_ALLOWLIST"


@pytest.fixture
def process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What building the app changes in this process is put back afterwards: Hayhooks' settings and the allow-list
    variable. EMBEDDING_BACKEND=torch keeps `keep_torch_out` from blocking torch for the tests that follow."""
    from hayhooks.settings import settings as hayhooks

    for name in HAYHOOKS_SETTINGS:
        monkeypatch.setattr(hayhooks, name, getattr(hayhooks, name))
    monkeypatch.setenv(ALLOWLIST, "")
    monkeypatch.delenv(ALLOWLIST)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv("EMBEDDING_BACKEND", "torch")
    for name in ("API_KEY", "MAX_BODY_BYTES", "CORS_ALLOW_ORIGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", "/nonexistent-data")  # nothing is opened: the deployments never load here
    # Hayhooks' create_app routes these loggers to loguru (no propagation): later tests read them with caplog
    names = [*PROJECT_LOGGERS, *hayhooks.intercepted_loggers]
    saved = {name: (logging.getLogger(name).handlers[:], logging.getLogger(name).propagate,
                    logging.getLogger(name).level) for name in names}
    yield
    for name, (handlers, propagate, level) in saved.items():
        stdlib_logger = logging.getLogger(name)
        stdlib_logger.handlers, stdlib_logger.propagate = handlers, propagate
        stdlib_logger.setLevel(level)


def app_with(monkeypatch: pytest.MonkeyPatch, stop: Callable[[], None] | None = None,
             preparation: Preparation | None = None, **env: str) -> FastAPI:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return create_server_app(stop, preparation)


def test_hayhooks_loads_nothing_itself_keeps_no_spans_and_logs_the_projects_loggers(
        process_state: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from hayhooks.settings import StartupDeployStrategy
    from hayhooks.settings import settings as hayhooks

    monkeypatch.setenv("CORS_ALLOW_ORIGINS", "http://ui.example, http://b.example")
    configure_hayhooks(Settings.from_env())
    configure_hayhooks(Settings.from_env())  # twice: no logger listed twice
    assert hayhooks.pipelines_dir == "" and hayhooks.additional_python_path == str(ROOT)
    assert hayhooks.startup_deploy_strategy == StartupDeployStrategy.SEQUENTIAL
    assert not (hayhooks.tracing_enabled or hayhooks.tracing_include_haystack_spans or hayhooks.monitoring_enabled)
    assert hayhooks.cors_allow_origins == ["http://ui.example", "http://b.example"]
    assert set(PROJECT_LOGGERS) <= set(hayhooks.intercepted_loggers)
    assert len(hayhooks.intercepted_loggers) == len(set(hayhooks.intercepted_loggers))
    assert os.environ[ALLOWLIST] == ALLOWLIST_ENV[ALLOWLIST]  # the pipelines' components may be loaded


def test_a_users_deserialization_allow_list_wins(process_state: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOWLIST, "my_components")
    configure_hayhooks(Settings.from_env())
    assert os.environ[ALLOWLIST] == "my_components"


def test_auth_and_the_body_limit_answer_before_the_start_up_gate(process_state: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    client = TestClient(app_with(monkeypatch, API_KEY="key-1", MAX_BODY_BYTES="100"))
    assert client.post("/agentic_rag/run", json={"query": "问"}).status_code == 401  # no key: not even "starting"
    too_large = client.post("/agentic_rag/run", headers=KEY, content=b"x" * 101)
    assert too_large.status_code == 413
    starting = client.post("/agentic_rag/run", headers=KEY, json={"query": "问"})
    assert starting.status_code == 503 and starting.headers["retry-after"] == "5"
    status = client.get("/status")  # public, and honest while nothing is loaded
    assert status.status_code == 503 and status.json()["status"] == "Starting"


def test_without_api_key_no_key_is_asked_for(process_state: None, monkeypatch: pytest.MonkeyPatch) -> None:
    client = TestClient(app_with(monkeypatch))
    assert client.post("/agentic_rag/run", json={"query": "问"}).status_code == 503


def test_the_home_page_favicon_and_ui_answer_while_the_deployments_load(process_state: None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    client = TestClient(app_with(monkeypatch, API_KEY="key-1"))
    home = client.get("/", follow_redirects=False)
    assert home.status_code == 307 and home.headers["location"] == "/ui/"
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.content == (ROOT / "ui" / "favicon.svg").read_bytes()
    page = client.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


def test_cross_origin_calls_come_only_from_the_listed_origins(process_state: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    preflight = {"Access-Control-Request-Method": "POST"}
    client = TestClient(app_with(monkeypatch, CORS_ALLOW_ORIGINS="http://ui.example"))
    allowed = client.options("/", headers={**preflight, "Origin": "http://ui.example"})
    assert allowed.headers.get("access-control-allow-origin") == "http://ui.example"
    refused = client.options("/", headers={**preflight, "Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in refused.headers
    monkeypatch.delenv("CORS_ALLOW_ORIGINS")
    default = TestClient(create_server_app()).options("/", headers={**preflight, "Origin": "http://ui.example"})
    assert "access-control-allow-origin" not in default.headers  # default: no other origin


def test_a_failed_preparation_stops_the_server_through_the_callback_given(process_state: None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    stopped: list[bool] = []
    preparation = Preparation([sys.executable, "-c", "print('building'); raise SystemExit(2)"])
    app = app_with(monkeypatch, lambda: stopped.append(True), preparation)
    app.state.deployments.load(app)  # what the lifespan starts in a thread
    assert stopped == [True]
    status = TestClient(app).get("/status").json()
    assert status["status"] == "Failed" and "exited with 2; its last line: building" in status["failed"]["prepare"]
