"""``POST /feedback`` (`interfaces.feedback_api`) in process, on the process's service over a temporary data folder:
the body's checks and a stored record. Feedback on real answers over HTTP is in
tests/serving/test_hayhooks_server.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import application.service as service_module
from application.feedback import FEEDBACK_FILE, FeedbackLog
from application.service import RAGService
from config.settings import Settings
from helpers.records.result import RAGResult
from interfaces.feedback_api import add_feedback_routes

QUESTION = "公司收集我的个人信息需要我同意吗"


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RAGService:
    served = RAGService(Settings(data_dir=tmp_path, qdrant_path=tmp_path / "qdrant"))
    monkeypatch.setattr(service_module, "_service", served)  # what `get_service` gives this process
    return served


@pytest.fixture
def client(service: RAGService) -> TestClient:
    app = FastAPI()
    add_feedback_routes(app)
    return TestClient(app)


def answered(service: RAGService) -> str:
    result = RAGResult(answer="需要同意。", mode="rag", trace={}, knowledge_base="statutes")
    return service.remember(result, QUESTION).answer_id or ""


def test_a_verdict_is_stored_and_answered_201_with_the_record(client: TestClient, service: RAGService) -> None:
    answer_id = answered(service)
    response = client.post("/feedback", json={"answer_id": f"  {answer_id} ", "verdict": "👍"})
    assert response.status_code == 201, response.text
    record = response.json()
    assert (record["answer_id"], record["verdict"], record["article"], record["source"]) == (answer_id, "up", None,
                                                                                             "api")
    assert record["question"] == QUESTION and record["answer"] == "需要同意。"
    assert FeedbackLog(service.settings.data_dir / FEEDBACK_FILE).records() == [record]  # on disk when answered


@pytest.mark.parametrize(("body", "detail"), [
    ([{"answer_id": "a"}], "the body must be a JSON object"),
    ("up", "the body must be a JSON object"),
    ({"answer_id": "a", "verdict": "up", "rating": 5, "comment": "x"},
     "unknown field(s) comment, rating: the fields are answer_id, verdict, article"),
    ({"answer_id": 42, "verdict": "up"}, "answer_id is required: the answer_id of the result the feedback is about"),
    ({"answer_id": "   ", "verdict": "up"}, "answer_id is required"),
    ({"answer_id": "a", "article": 14}, "article must be text naming one article, e.g. 劳动合同法第八十二条"),
    ({"answer_id": "a", "article": ["个人信息保护法第十四条"]}, "article must be text naming one article"),
])
def test_a_malformed_body_is_a_400_before_any_answer_is_looked_up(client: TestClient, body: object,
                                                                  detail: str) -> None:
    response = client.post("/feedback", json=body)
    assert response.status_code == 400 and response.json()["detail"].startswith(detail)


def test_a_verdict_that_is_not_one_is_a_400_and_nothing_is_stored(client: TestClient, service: RAGService) -> None:
    response = client.post("/feedback", json={"answer_id": answered(service), "verdict": 1})
    assert response.status_code == 400 and response.json()["detail"].startswith("verdict must be one of up, 👍")
    assert FeedbackLog(service.settings.data_dir / FEEDBACK_FILE).records() == []
