"""The request guards (`interfaces.request_guards`) around a tiny FastAPI app, stacked as the server stacks them
(auth outermost): bearer auth (public paths, the exact ``Bearer <key>``, preflights, lifespan) and the body limit (by
Content-Length before the app runs, while a chunked body streams in, and over FastAPI's own 400 for a broken form).
The real server's auth and limit over HTTP are in tests/serving/test_security.py."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Annotated

import pytest
from fastapi import FastAPI, File, Request, UploadFile
from fastapi.testclient import TestClient

from interfaces.request_guards import BearerAuthMiddleware, BodyLimitMiddleware

API_KEY = "test-key-0d1f"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
LIMIT = 200
TOO_LARGE = f"request body too large: the limit is {LIMIT} bytes (MAX_BODY_BYTES)"
QUESTION = "公司收集我的个人信息需要我同意吗".encode()  # 48 bytes of UTF-8


def guarded_app() -> tuple[FastAPI, dict]:
    seen: dict = {"bodies": [], "started": False}

    @asynccontextmanager
    async def lifespan(_app):
        seen["started"] = True
        yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/")
    @app.get("/status")
    @app.get("/ui")
    @app.get("/ui/app.js")
    @app.get("/favicon.ico")
    @app.get("/status-report")
    @app.get("/openapi-private")
    @app.get("/uiadmin")
    def public_or_not(request: Request) -> dict:
        return {"path": request.url.path}

    @app.post("/agentic_rag/run")
    async def run(request: Request) -> dict:
        body = await request.body()
        seen["bodies"].append(body)
        return {"bytes": len(body)}

    @app.api_route("/agentic_rag/run", methods=["OPTIONS"])
    def preflight() -> dict:
        return {"allow": "POST"}

    @app.post("/index/run")
    async def index(files: Annotated[list[UploadFile], File()]) -> dict:
        return {"files": len(files)}

    app.add_middleware(BodyLimitMiddleware, max_bytes=LIMIT)  # as interfaces/app_factory.py: auth added last,
    app.add_middleware(BearerAuthMiddleware, api_key=API_KEY)  # so it runs first
    return app, seen


@pytest.fixture
def guarded():
    app, seen = guarded_app()
    with TestClient(app) as client:
        yield client, seen


def chunks(*parts: bytes):
    """A body sent in chunks with no Content-Length (chunked transfer encoding)."""
    yield from parts


# --- bearer auth ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/status", "/ui", "/ui/app.js", "/favicon.ico"])
def test_public_paths_need_no_key(guarded, path):
    client, _ = guarded
    response = client.get(path)
    assert response.status_code == 200 and response.json() == {"path": path}


@pytest.mark.parametrize("path", ["/openapi-private", "/uiadmin", "/openapi.json", "/docs"])
def test_every_other_path_needs_the_key(guarded, path):
    client, _ = guarded
    assert client.get(path).status_code == 401
    assert client.get(path, headers=AUTH).status_code == 200


def test_a_request_without_the_key_is_a_json_401_and_never_reaches_the_app(guarded):
    client, seen = guarded
    response = client.post("/agentic_rag/run", content=QUESTION)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == {"detail": "missing or invalid API key: send Authorization: Bearer <API_KEY>"}
    assert seen["bodies"] == []


@pytest.mark.parametrize("authorization", [
    "Bearer wrong-key",
    API_KEY,  # the key without the scheme
    f"Bearer {API_KEY[:-1]}",  # a prefix of the key
    f"Bearer {API_KEY}x",
    f"Bearer  {API_KEY}",
    f"Basic {API_KEY}",
    "Bearer ",
])
def test_only_the_exact_bearer_key_is_let_through(guarded, authorization):
    client, seen = guarded
    refused = client.post("/agentic_rag/run", content=QUESTION, headers={"Authorization": authorization})
    assert refused.status_code == 401
    assert seen["bodies"] == []
    response = client.post("/agentic_rag/run", content=QUESTION, headers=AUTH)
    assert response.status_code == 200 and seen["bodies"] == [QUESTION]


def test_a_preflight_needs_no_key(guarded):
    client, _ = guarded
    response = client.options("/agentic_rag/run")
    assert response.status_code == 200 and response.json() == {"allow": "POST"}


def test_the_lifespan_passes_both_guards(guarded):
    _, seen = guarded
    assert seen["started"]


def test_a_route_that_only_starts_with_status_needs_the_key(guarded):
    """/status and /favicon.ico were matched as prefixes: a route that only started with /status needed no key."""
    client, _ = guarded
    assert client.get("/status-report").status_code == 401


# --- body limit -------------------------------------------------------------------------------------------------


def test_a_body_at_the_limit_reaches_the_app(guarded):
    client, seen = guarded
    body = b"x" * LIMIT
    response = client.post("/agentic_rag/run", content=body, headers=AUTH)
    assert response.status_code == 200 and response.json() == {"bytes": LIMIT}
    assert seen["bodies"] == [body]


def test_a_declared_length_over_the_limit_is_refused_before_the_app_runs(guarded):
    client, seen = guarded
    response = client.post("/agentic_rag/run", content=QUESTION * 5, headers=AUTH)  # 240 bytes
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == {"detail": TOO_LARGE}
    assert seen["bodies"] == []


def test_a_chunked_body_is_counted_while_it_streams_in(guarded):
    client, seen = guarded
    small = client.post("/agentic_rag/run", content=chunks(QUESTION, b"?" * (LIMIT - len(QUESTION))), headers=AUTH)
    assert small.status_code == 200 and small.json() == {"bytes": LIMIT}
    large = client.post("/agentic_rag/run", content=chunks(*[QUESTION] * 4, b"?" * 9), headers=AUTH)
    assert large.status_code == 413 and large.json() == {"detail": TOO_LARGE}
    assert len(seen["bodies"]) == 1  # the large one never got to the handler's return


def test_an_upload_over_the_limit_is_a_413_not_the_forms_400(guarded):
    client, _ = guarded
    head = b'--zzz\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n\r\n'
    article = "第一条 员工请假需提前三天申请。".encode()
    headers = {**AUTH, "content-type": "multipart/form-data; boundary=zzz"}
    fits = client.post("/index/run", content=chunks(head, article, b"\r\n--zzz--\r\n"), headers=headers)
    assert fits.status_code == 200 and fits.json() == {"files": 1}
    response = client.post("/index/run", content=chunks(head, article, article, article), headers=headers)
    assert response.status_code == 413 and response.json() == {"detail": TOO_LARGE}


def test_auth_is_checked_before_the_body_is_measured(guarded):
    client, _ = guarded
    assert client.post("/agentic_rag/run", content=QUESTION * 5).status_code == 401
    assert client.post("/agentic_rag/run", content=QUESTION * 5, headers=AUTH).status_code == 413
