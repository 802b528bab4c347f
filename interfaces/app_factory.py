"""The server's ASGI app: Hayhooks with this project's deployments (``serving/``), the web UI at ``/ui/``, the
routes Hayhooks lacks (``GET /index/jobs``, ``POST /feedback``, ``/docs`` served offline) and the middlewares, from
the outermost: auth and body limit (`interfaces.request_guards`), the start-up gate (`interfaces.startup`),
disconnects and draining (`interfaces.disconnects`), the stream end (`interfaces.stream_end`) and the JSON 500
(`interfaces.error_responses`).

Modules that import Haystack (and with it torch) are imported inside `create_server_app`, after `keep_torch_out`.

Usage::

    app = create_server_app()        # what `interfaces.server_app.serve` runs under uvicorn
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from interfaces.preparation import Preparation
from interfaces.request_guards import BearerAuthMiddleware, BodyLimitMiddleware
from interfaces.routes import offer_only_our_routes
from interfaces.torch_blocker import keep_torch_out

if TYPE_CHECKING:
    from config.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
UI_DIR = ROOT / "ui"
SERVING_DIR = ROOT / "serving"
PROJECT_LOGGERS = ("application", "components", "document_store", "interfaces", "llm_access", "pipelines")


def configure_hayhooks(settings: Settings) -> None:
    """Point Hayhooks at this project's deployments; its dashboards and span capture stay off (they would keep
    queries and documents in memory); cross-origin calls only from ``CORS_ALLOW_ORIGINS`` (default: none)."""
    from hayhooks.settings import StartupDeployStrategy
    from hayhooks.settings import settings as hayhooks

    from pipelines.yaml_export import ALLOWLIST_ENV

    for name, value in ALLOWLIST_ENV.items():
        os.environ.setdefault(name, value)
    # Hayhooks loads nothing itself: `interfaces.startup.Deployments` loads serving/'s deployments one at a time
    # (the parallel default once failed in CI with "dictionary changed size during iteration") after the server
    # listens, and reports a failure instead of only logging it
    hayhooks.pipelines_dir = ""
    hayhooks.additional_python_path = str(ROOT)
    hayhooks.startup_deploy_strategy = StartupDeployStrategy.SEQUENTIAL
    # this project's log lines (deployments, cancellations, index jobs, the embedded LLM) go where Hayhooks' go
    hayhooks.intercepted_loggers = [*dict.fromkeys([*hayhooks.intercepted_loggers, *PROJECT_LOGGERS])]
    hayhooks.tracing_enabled = False
    hayhooks.tracing_include_haystack_spans = False
    hayhooks.monitoring_enabled = False
    hayhooks.cors_allow_origins = list(settings.cors_allow_origins)


def create_server_app(stop_server: Callable[[], None] | None = None,
                      preparation: Preparation | None = None) -> FastAPI:
    """The ASGI app: Hayhooks + UI + auth (``API_KEY``) + body limit (``MAX_BODY_BYTES``); the deployments load
    after the server listens (`interfaces.startup`), after the ``preparation`` when there is one. ``stop_server``
    ends the server when a required deployment fails to load or the preparation fails (default: SIGTERM to this
    process)."""
    from config.settings import Settings

    settings = Settings.from_env()
    keep_torch_out(settings.embedding_backend, settings.reranker)
    configure_hayhooks(settings)
    from hayhooks import create_app

    from interfaces.disconnects import DisconnectMiddleware, InFlight
    from interfaces.error_responses import InternalErrorMiddleware, http_error, validation_error
    from interfaces.feedback_api import add_feedback_routes
    from interfaces.index_jobs_api import add_index_job_routes
    from interfaces.safe_logging import escape_markup_in_hayhooks_logs
    from interfaces.startup import Deployments, StatusGate, required_deployments
    from interfaces.stream_end import StreamEndMiddleware

    app = create_app()
    app.add_middleware(InternalErrorMiddleware)  # outside Hayhooks' request ids, inside the rest
    app.add_middleware(StreamEndMiddleware)
    escape_markup_in_hayhooks_logs()
    offer_only_our_routes(app)
    deployments = Deployments(SERVING_DIR, required_deployments(),
                              on_fatal=stop_server or (lambda: os.kill(os.getpid(), signal.SIGTERM)),
                              preparation=preparation, preload=preload_deployment_code)
    app.state.deployments = deployments
    hayhooks_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with hayhooks_lifespan(app):
            deployments.start(app)
            yield

    app.router.lifespan_context = lifespan
    app.mount("/ui", StaticFiles(directory=UI_DIR, html=True), name="ui")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/ui/")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:  # browsers ask for it whatever the page links: the UI's icon
        return FileResponse(UI_DIR / "favicon.svg", media_type="image/svg+xml")

    add_offline_docs(app)
    add_index_job_routes(app)
    add_feedback_routes(app)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.state.in_flight = InFlight()  # drained on SIGTERM (`DrainingServer`)
    app.add_middleware(DisconnectMiddleware, in_flight=app.state.in_flight)
    app.add_middleware(StatusGate, deployments=deployments)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    if settings.api_key:
        app.add_middleware(BearerAuthMiddleware, api_key=settings.api_key)
    return app


def add_offline_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the ``swagger-ui-bundle`` package's files, not from a CDN (this server may have
    no internet)."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from swagger_ui_bundle import swagger_ui_path

    app.mount("/docs-assets", StaticFiles(directory=swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")


def preload_deployment_code() -> None:
    """Import what the chat deployment imports when it loads (its API, scikit-learn for the coverage check) and
    read jieba's dictionary: about 3 s of its load, done while `prepare` runs. No model and no store is opened: those
    may still be being built. A failure is left to the deployment, which reports it."""
    from haystack import logging

    try:
        import sklearn.feature_extraction.text  # noqa: F401

        import interfaces.chat_api  # noqa: F401
        from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer

        JiebaTokenizer()
    except Exception as error:  # noqa: BLE001 - the deployment's own load reports it
        logging.getLogger(__name__).debug("Preloading the deployments' code failed: {error}", error=error)
