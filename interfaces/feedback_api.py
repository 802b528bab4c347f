"""``POST /feedback``: 👍 / 👎 and "the right article is …" on one of this server's answers (`application.feedback`).

The body is JSON ``{"answer_id": ..., "verdict": "up"|"down"|"👍"|"👎", "article": "劳动合同法第八十二条"}`` (a verdict,
an article, or both; ``answer_id`` is the ``answer_id`` of a ``/agentic_rag/run`` result or of the chat stream's
``rag_result`` event). The answer is 201 with the stored record once it is on disk; an unknown answer is a 404, bad
input (no body, no verdict and no article, an article the knowledge base does not hold) a one-line 400. Behind the
same bearer authentication as every other API route.

Usage::

    add_feedback_routes(app)
    httpx.post(f"{base}/feedback", json={"answer_id": result["answer_id"], "verdict": "down",
                                         "article": "个人信息保护法第十四条"})
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool

from application.feedback import UnknownAnswerError
from application.service import get_service
from interfaces.chat_api import http_errors

FEEDBACK_FIELDS = ("answer_id", "verdict", "article")


def add_feedback_routes(app: FastAPI) -> None:
    @app.post("/feedback", tags=["feedback"], status_code=201,
              summary="Feedback on an answer: 👍/👎, the right article")
    async def feedback(request: Request) -> dict[str, Any]:
        body = await feedback_body(request)
        try:
            return await run_in_threadpool(record_feedback, body)
        except UnknownAnswerError as error:
            raise HTTPException(404, str(error)) from error


async def feedback_body(request: Request) -> dict[str, Any]:
    """The request's JSON object with a string ``answer_id``; anything else a one-line 400."""
    try:
        body = await request.json()
    except ValueError:
        raise HTTPException(400, 'the body must be JSON: {"answer_id": ..., "verdict": "up"|"down", '
                                 '"article": "劳动合同法第八十二条"}') from None
    if not isinstance(body, dict):
        raise HTTPException(400, "the body must be a JSON object")
    if unknown := sorted(set(body) - set(FEEDBACK_FIELDS)):
        raise HTTPException(400, f"unknown field(s) {', '.join(unknown)}: the fields are {', '.join(FEEDBACK_FIELDS)}")
    if not isinstance(body.get("answer_id"), str) or not body["answer_id"].strip():
        raise HTTPException(400, "answer_id is required: the answer_id of the result the feedback is about")
    if body.get("article") is not None and not isinstance(body["article"], str):
        raise HTTPException(400, "article must be text naming one article, e.g. 劳动合同法第八十二条")
    return body


def record_feedback(body: dict[str, Any]) -> dict[str, Any]:
    with http_errors():  # a ValueError (verdict, article) is a 400
        return get_service().feedback(body["answer_id"].strip(), body.get("verdict"), body.get("article"),
                                      source="api")
