"""`interfaces.routes`: which routes the server offers. Checked on small FastAPI apps; the real server's routes
(no runtime deployment, the model list) are in tests/serving/test_security.py and test_hayhooks_server.py."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from interfaces.routes import BLOCKED_PREFIXES, list_chat_models, offer_only_our_routes, prune_routes


def app_with(*paths: str, router_paths: tuple[str, ...] = (), prefix: str = "") -> FastAPI:
    app = FastAPI(docs_url=None, redoc_url=None)
    for path in paths:
        app.add_api_route(path, lambda: {"ok": True}, methods=["GET"])
    if router_paths:
        router = APIRouter()
        for path in router_paths:
            router.add_api_route(path, lambda: {"ok": True}, methods=["GET"])
        app.include_router(router, prefix=prefix)
    return app


def status_of(app: FastAPI, *paths: str) -> dict[str, int]:
    client = TestClient(app)
    return {path: client.get(path).status_code for path in paths}


def test_blocked_routes_are_removed_and_the_rest_stay() -> None:
    app = app_with("/deploy_files", "/undeploy/{name}", "/draw/{name}", "/v1/files", "/responses", "/status",
                   "/agentic_rag/run", "/index/jobs")
    prune_routes(app.router.routes)
    assert status_of(app, "/deploy_files", "/undeploy/x", "/draw/x", "/v1/files", "/responses") == {
        "/deploy_files": 404, "/undeploy/x": 404, "/draw/x": 404, "/v1/files": 404, "/responses": 404}
    assert status_of(app, "/status", "/agentic_rag/run", "/index/jobs") == {
        "/status": 200, "/agentic_rag/run": 200, "/index/jobs": 200}


def test_routes_inside_an_included_router_are_removed_too() -> None:
    """Hayhooks adds its deploy and OpenAI routes through routers (the files API inside the OpenAI router)."""
    app = app_with("/status", router_paths=("/deploy_yaml", "/v1/files", "/v1/chat/completions"))
    prune_routes(app.router.routes)
    assert status_of(app, "/deploy_yaml", "/v1/files", "/v1/chat/completions", "/status") == {
        "/deploy_yaml": 404, "/v1/files": 404, "/v1/chat/completions": 200, "/status": 200}


def test_fastapis_own_api_docs_are_removed() -> None:
    """They load Swagger UI from a CDN; the server app serves /docs offline instead."""
    assert {"/docs", "/redoc"} <= set(BLOCKED_PREFIXES)
    app = FastAPI()
    prune_routes(app.router.routes)
    assert status_of(app, "/docs", "/redoc", "/docs/oauth2-redirect", "/openapi.json") == {
        "/docs": 404, "/redoc": 404, "/docs/oauth2-redirect": 404, "/openapi.json": 200}


def test_other_prefixes_can_be_given() -> None:
    app = app_with("/v1/models", "/models", "/status")
    prune_routes(app.router.routes, ("/v1/models", "/models"))
    assert status_of(app, "/v1/models", "/models", "/status") == {"/v1/models": 404, "/models": 404, "/status": 200}


def test_a_prefixed_router_is_pruned_by_the_paths_it_serves() -> None:
    app = app_with(router_paths=("/{file_id}",), prefix="/files")
    app.include_router(app_with(router_paths=("/docs-helper",)).router, prefix="/api")
    prune_routes(app.router.routes)
    assert status_of(app, "/files/abc", "/api/docs-helper") == {"/files/abc": 404, "/api/docs-helper": 200}


def test_the_model_list_names_the_chat_model_only() -> None:
    """Hayhooks' own list (every deployment) is replaced, at both paths."""
    app = app_with(router_paths=("/v1/models", "/models"))
    list_chat_models(app)
    client = TestClient(app)
    for path in ("/v1/models", "/models"):
        listed = client.get(path).json()
        assert [(m["id"], m["owned_by"]) for m in listed["data"]] == [("agentic_rag", "hayhooks")], path


def test_offer_only_our_routes_prunes_and_lists_the_chat_model() -> None:
    app = app_with("/deploy_files", "/status", router_paths=("/v1/models",))
    offer_only_our_routes(app)
    client = TestClient(app)
    assert client.get("/deploy_files").status_code == 404 and client.get("/status").status_code == 200
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["agentic_rag"]
