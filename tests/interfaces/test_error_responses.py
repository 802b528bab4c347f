"""Issue 63, item 3: a 500 that still happens names a request id, and the server log holds its traceback under it
(the plain-text ``Internal Server Error`` and a one-line log before)."""

from __future__ import annotations

import logging
import re

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient
from hayhooks.server.logger import RequestIdMiddleware
from starlette.exceptions import HTTPException as StarletteHTTPException

from interfaces.error_responses import InternalErrorMiddleware, http_error

ID_RE = re.compile(r"请求编号 ([0-9a-f]{8})")


def stage_that_breaks() -> None:
    raise RecursionError("maximum recursion depth exceeded")


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()

    @app.get("/unexpected")
    def unexpected() -> None:
        stage_that_breaks()

    @app.get("/pipeline-failed")
    def pipeline_failed() -> None:
        raise HTTPException(500, "内部错误（bm25），请稍后重试；详情见服务器日志")

    @app.get("/not-found")
    def not_found() -> None:
        raise HTTPException(404, "no such answer")

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_middleware(RequestIdMiddleware)  # Hayhooks' (create_app adds it first)
    app.add_middleware(InternalErrorMiddleware)
    return TestClient(app, raise_server_exceptions=False)


def test_an_unexpected_error_is_a_json_500_naming_the_request_id_and_logged_with_its_traceback(client, caplog):
    with caplog.at_level(logging.ERROR, logger="interfaces.error_responses"):
        response = client.get("/unexpected")
    assert response.status_code == 500 and response.headers["content-type"].startswith("application/json")
    request_id = ID_RE.search(response.json()["detail"]).group(1)
    assert response.headers["x-request-id"] == request_id
    assert "Traceback" not in response.text and "Recursion" not in response.text  # details stay in the log
    [record] = [r for r in caplog.records if request_id in r.getMessage()]
    assert record.exc_info is not None and record.exc_info[0] is RecursionError


def test_a_pipeline_failure_names_the_request_id_of_its_log_line(client):
    response = client.get("/pipeline-failed")
    assert response.status_code == 500
    detail = response.json()["detail"]
    assert detail.startswith("内部错误（bm25）") and ID_RE.search(detail).group(1) == response.headers["x-request-id"]


def test_a_client_error_is_left_as_it_was(client):
    response = client.get("/not-found")
    assert response.status_code == 404 and response.json() == {"detail": "no such answer"}
