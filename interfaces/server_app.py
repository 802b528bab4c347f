"""The HTTP server: Hayhooks' app with this project's deployments (``serving/``), the web UI at ``/ui/``,
bearer authentication when ``API_KEY`` is set, and a request-body limit.

The API routes are Hayhooks' (``/status``, ``/{deployment}/run``, ``/v1/chat/completions``) plus ``GET /index/jobs``
(`interfaces.index_jobs_api`), ``POST /feedback`` (`interfaces.feedback_api`) and ``/docs`` served offline; the UI is static files that call those same routes. The
deployments load after the server listens (`interfaces.startup`); a client that disconnects cancels its request's
run (`interfaces.disconnects`). With ``API_KEY`` set, every route except ``/status``, ``/favicon.ico`` and the
static UI files (code, no data; the page asks for the key and sends it) needs ``Authorization: Bearer <key>``.

Usage::

    python -m pipelines serve                      # 127.0.0.1:1416, see `serve --help`
    python -m interfaces.server_app --port 8000     # the same, without the CLI
"""

from __future__ import annotations

import argparse
import hmac
import importlib.abc
import os
import shlex
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config.offline import apply_offline_defaults

apply_offline_defaults()  # before anything imports Haystack (`python -m interfaces.server_app` skips the CLI)

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from interfaces.asgi import ASGIApp, Message, Receive, Scope, Send, send_json_body
from interfaces.launch import add_serve_arguments
from interfaces.preparation import Preparation
from interfaces.routes import offer_only_our_routes

if TYPE_CHECKING:
    from config.settings import Settings

# Modules that import Haystack (and with it torch) are imported inside `create_server_app`, after `keep_torch_out`.

ROOT = Path(__file__).resolve().parent.parent
UI_DIR = ROOT / "ui"
STARTUP_FAILED_EXIT_CODE = 3  # a required deployment failed to load (uvicorn's own code for a failed start-up)
PUBLIC_PATHS = ("/status", "/ui/", "/favicon.ico")
SERVING_DIR = ROOT / "serving"
PROJECT_LOGGERS = ("application", "components", "document_store", "interfaces", "llm_access", "pipelines")

async def send_json(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send_json_body(send, status, {"detail": detail}, headers)


class BearerAuthMiddleware:
    """Refuses requests without ``Authorization: Bearer <api_key>`` (401), except on public paths."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app, self._expected = app, f"Bearer {api_key}".encode()

    @staticmethod
    def is_public(path: str) -> bool:
        return path == "/" or any(path == p.rstrip("/") or path.startswith(p) for p in PUBLIC_PATHS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "OPTIONS" and not self.is_public(scope["path"]):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send_json(send, 401, "missing or invalid API key: send Authorization: Bearer <API_KEY>",
                                [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


class BodyTooLargeError(Exception):
    pass


class BodyLimitMiddleware:
    """Refuses request bodies over ``max_bytes`` with 413, by Content-Length or while the body streams in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body too large: the limit is {self.max_bytes} bytes (MAX_BODY_BYTES)"
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await send_json(send, 413, message)
            return
        received = 0
        exceeded = started = answered = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            incoming = await receive()
            received += len(incoming.get("body", b""))
            if received > self.max_bytes:
                exceeded = True
                raise BodyTooLargeError
            return incoming

        async def guarded_send(outgoing: Message) -> None:
            # the app may turn our error into its own (FastAPI answers 400 when reading a form fails): the 413 wins
            nonlocal started, answered
            if exceeded and not started:
                if not answered:
                    answered = True
                    await send_json(send, 413, message)
                return
            started = started or outgoing["type"] == "http.response.start"
            await send(outgoing)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLargeError:
            if not started and not answered:
                await send_json(send, 413, message)


class TorchBlocker(importlib.abc.MetaPathFinder):
    """A finder, first on ``sys.meta_path``, that makes ``import torch`` (and its submodules) raise
    ``ModuleNotFoundError`` while torch stays absent from ``sys.modules``, so code that looks there (SciPy's array-API
    checks, imported by scikit-learn) sees no torch rather than a ``None`` entry it cannot read."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "torch" or fullname.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {fullname!r} (kept out of this server: keep_torch_out)",
                                      name=fullname)


def keep_torch_out(embedding_backend: str, reranker: str) -> bool:
    """Make ``import torch`` fail in this process when no served component needs it, and say whether it does.

    Haystack imports torch as soon as it is installed (``haystack.utils.device``), about 180 MiB of a serving
    process, although with ``EMBEDDING_BACKEND=onnx-int8`` the embedders run on ONNX Runtime alone. Only the torch
    backend and ``RERANKER=cross-encoder`` need it. Haystack's optional imports see torch as absent
    (`TorchBlocker`)."""
    if embedding_backend == "torch" or reranker == "cross-encoder" or "torch" in sys.modules:
        return False
    if not any(isinstance(finder, TorchBlocker) for finder in sys.meta_path):
        sys.meta_path.insert(0, TorchBlocker())
    return True


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_serve_arguments(parser)
    parser.add_argument("--prepare-command", default="",
                        help="a command to run (to its end, output passed through) before the deployments load, while "
                             "the server already listens; `python -m pipelines serve` passes its `prepare`")
    args = parser.parse_args(argv)
    refuse_a_second_server()
    command = shlex.split(args.prepare_command)
    preparation = Preparation(command) if command else None
    # uvicorn stops gracefully on SIGTERM, then raises the signal again with the handler it found: by default that
    # kills the process before the atexit hook that stops the embedded LLM server could run. Exit through Python.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        if preparation is not None:
            preparation.start()  # first thing: its imports run beside this server's own
        serve(args.host, args.port, preparation)
    finally:
        if preparation is not None:
            preparation.stop()


def refuse_a_second_server() -> None:
    """Exit with `STARTUP_FAILED_EXIT_CODE` when another `serve` of this project owns the embedded store, before
    anything (its `prepare` either) opens it; the other server's record is left as it is."""
    from config.settings import Settings
    from interfaces.server_record import running_server

    settings = Settings.from_env()
    if not settings.qdrant_url and (other := running_server(settings.qdrant_path)) is not None:
        print(f"error: the knowledge bases at {settings.qdrant_path} are served by another `serve` (pid {other.pid}, "
              f"{other.url}); stop it first, or give this one its own QDRANT_PATH", file=sys.stderr)
        sys.exit(STARTUP_FAILED_EXIT_CODE)


def serve(host: str, port: int, preparation: Preparation | None) -> None:
    """Run the server until it is stopped; exit with `STARTUP_FAILED_EXIT_CODE` when it could not start."""
    import uvicorn

    from config.settings import Settings
    from interfaces.server_record import client_url, remove_server_record, write_server_record

    settings = Settings.from_env()
    # the CLI that finds an embedded knowledge base in use asks this server instead (`interfaces.server_record`)
    owned = None if settings.qdrant_url else settings.qdrant_path
    server: uvicorn.Server | None = None

    def stop_server() -> None:
        assert server is not None
        server.should_exit = True  # read by uvicorn's main loop within a tenth of a second

    keep_torch_out(settings.embedding_backend, settings.reranker)  # before the LLM's thread imports Haystack
    start_llm_early(settings, None if preparation is None else preparation.ended)
    app = create_server_app(stop_server, preparation)
    from interfaces.draining import DrainingServer  # after keep_torch_out: it imports Haystack

    server = DrainingServer(uvicorn.Config(app, host=host, port=port, log_config=None, timeout_graceful_shutdown=5),
                            app.state.in_flight)
    if owned is not None:
        write_server_record(owned, client_url(host, port))
    try:
        server.run()
    finally:
        if owned is not None:
            remove_server_record(owned)
        if app.state.deployments.fatal:
            sys.exit(STARTUP_FAILED_EXIT_CODE)
    if not server.started:
        sys.exit(STARTUP_FAILED_EXIT_CODE)


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


def start_llm_early(settings: Settings, prepared: threading.Event | None = None) -> threading.Thread:
    """Start the embedded LLM now, in a thread, when it is the LLM these settings resolve to (with logprobs when a
    ranker reads them): its process loads the GGUF on the other core while this one imports Hayhooks and loads the
    deployments, which then find it started (or wait for it). With ``prepared`` (a prepare command runs, which may
    build the GGUF) a missing GGUF is waited for until it appears or ``prepared`` is set. A failure is left to the
    chat deployment, which starts the LLM again and reports why it cannot. The thread imports nothing: the imports
    happen here, before it starts."""
    from haystack import logging

    from llm_access.factory import resolve_endpoint
    from pipelines.retrieval import reads_llm_logprobs

    logprobs = reads_llm_logprobs(settings)

    def start() -> None:
        if prepared is not None:
            gguf = Path(settings.llm_gguf)
            while not gguf.exists() and not prepared.wait(0.5):
                pass
        try:
            resolve_endpoint(settings, logprobs=logprobs)
        except Exception as error:  # noqa: BLE001 - the deployment's own start reports it
            logging.getLogger(__name__).debug("Early start of the LLM failed: {error}", error=error)

    thread = threading.Thread(target=start, daemon=True, name="llm-start")
    thread.start()
    return thread


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
