"""Loading the server's deployments after it listens, and a ``/status`` that tells the truth.

Hayhooks loads its deployments before the server listens, and a deployment that fails to load is only a log
warning: the server then answers ``/status`` "Up!" and 404 on the missing routes, and a slow start (the embedded LLM)
cannot be stopped with SIGTERM until it is over. Here the server listens at once and `Deployments.load` loads each
deployment of ``serving/`` in order, in a background thread. Meanwhile, and whenever one is missing, ``/status``
answers 503 with what is loading and what failed and why (`StatusGate`), and the routes of the deployments not
loaded yet answer 503 "starting"; a loaded deployment's routes answer at once.
A deployment in ``REQUIRED_DEPLOYMENTS`` that fails stops the server, which exits non-zero.

With a `Preparation` (the command ``python -m pipelines serve`` passes: ``python -m pipelines prepare``, which builds
what a first answer needs), the server starts it as a child process before its own imports, and the loading thread
waits for it, its output passed through, before the deployments load; meanwhile ``/status`` answers 503 "Preparing"
with its latest line, and a preparation that fails stops the server like a required deployment.

Usage (what `interfaces.server_app.create_server_app` does)::

    deployments = Deployments(SERVING_DIR, required_deployments(), on_fatal=stop_server)
    app.add_middleware(StatusGate, deployments=deployments)
    deployments.start(app)   # from the app's lifespan
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import logging

from config.settings import Settings
from helpers.processes.priority import lower_this_threads_priority
from interfaces.asgi import ASGIApp, Receive, Scope, Send, send_json_body
from interfaces.preparation import Preparation

logger = logging.getLogger(__name__)

ALL_DEPLOYMENTS = ("agentic_rag", "index", "knowledge_bases")
CHAT_DEPLOYMENT = "agentic_rag"  # the one behind /v1/chat/completions
ALWAYS_OPEN = ("/ui/", "/favicon.ico")  # static files answer while the deployments load
PREPARE = "prepare"  # the name a failed prepare command has in ``/status``'s "failed"


def required_deployments() -> frozenset[str]:
    """``REQUIRED_DEPLOYMENTS``: the deployments without which the server does not run (comma-separated; default
    all three). One left out may fail to load: the server then runs without it and ``/status`` says 503."""
    names = set(Settings.from_env().required_deployments or ALL_DEPLOYMENTS)
    if unknown := names - set(ALL_DEPLOYMENTS):
        raise ValueError(f"REQUIRED_DEPLOYMENTS names unknown deployments: {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(ALL_DEPLOYMENTS)}")
    return frozenset(names)


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:300]


class Deployments:
    """The state of loading ``serving/``'s deployments: what the `Preparation` (if any) is doing, which deployment
    is loading, which failed (with the reason), done. ``preload`` (imports, no models) runs beside the preparation,
    in a thread of its own, and the deployments start after it ends.

    Lifetime: one per server app; written by the loading thread, read by requests (single assignments only)."""

    def __init__(self, serving_dir: Path, required: frozenset[str], on_fatal: Callable[[], None],
                 preparation: Preparation | None = None, preload: Callable[[], None] | None = None) -> None:
        self.serving_dir = serving_dir
        self.required = required
        self.on_fatal = on_fatal
        self.preparation = preparation
        self.preload = preload
        self.loading: str | None = None
        self.loaded: list[str] = []
        self.failed: dict[str, str] = {}
        self.done = False
        self.fatal = False

    def start(self, app: Any) -> None:
        """Load every deployment in a daemon thread (a SIGTERM meanwhile ends the process at once)."""
        threading.Thread(target=self.load, args=(app,), daemon=True, name="deploy").start()

    def load(self, app: Any) -> None:
        from hayhooks.server.app import deploy_files_pipeline

        if self.preparation is not None and not self.prepare(self.preparation):
            return
        for name in ALL_DEPLOYMENTS:
            self.loading = name
            try:
                deploy_files_pipeline(app, self.serving_dir / name)
            except Exception as error:  # noqa: BLE001 - any failure of a wrapper's setup is reported, not raised
                self.failed[name] = one_line(error)
                logger.error("Deployment {deployment} failed to load: {reason}",
                             deployment=name, reason=self.failed[name])
                if name in self.required:
                    self.fatal, self.loading = True, None
                    logger.error("Stopping: {deployment} is required (REQUIRED_DEPLOYMENTS)", deployment=name)
                    self.on_fatal()
                    return
            else:
                self.loaded.append(name)
        self.loading, self.done = None, True
        if self.failed:
            logger.warning("Serving without {names}: /status answers 503", names=", ".join(self.failed))
        else:
            logger.info("Every deployment loaded: {names}", names=", ".join(self.loaded))

    def prepare(self, preparation: Preparation) -> bool:
        """Wait for the preparation, the preload beside it; False when it failed, which stops the server."""
        preloading = threading.Thread(target=self._preload, daemon=True, name="preload")
        preloading.start()
        if (reason := preparation.finish()) is not None:
            self.failed[PREPARE], self.fatal = reason, True
            logger.error("Stopping: preparing failed: {reason}", reason=reason)
            self.on_fatal()
            return False
        preloading.join()  # the deployments import the same modules: never two threads at once
        return True

    def _preload(self) -> None:
        """The preload, at the lowest CPU priority: its imports are needed only once the preparation has ended, so
        they take the CPU that the preparation leaves idle (a core during the single-threaded ONNX export) rather
        than the preparation's own."""
        lower_this_threads_priority()
        if self.preload is not None:
            self.preload()

    @property
    def preparing(self) -> str | None:
        return None if self.preparation is None else self.preparation.latest

    @property
    def healthy(self) -> bool:
        return self.done and not self.failed

    def status(self) -> dict[str, Any]:
        """The body of a 503 ``/status``."""
        state = ("Failed" if self.fatal else "Degraded" if self.done else "Preparing" if self.preparing is not None
                 else "Starting")
        return {"status": state, "preparing": self.preparing, "pipelines": list(self.loaded), "loading": self.loading,
                "failed": dict(self.failed)}


class StatusGate:
    """ASGI middleware: ``/status`` is Hayhooks' own only while every deployment is loaded, a 503 with the
    `Deployments` state otherwise; until loading ends, the routes of a deployment not loaded yet answer 503 (with
    ``Retry-After``) instead of 404, and those of a loaded one answer (the chat deployment loads first)."""

    def __init__(self, app: ASGIApp, deployments: Deployments) -> None:
        self.app, self.deployments = app, deployments

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.deployments.healthy:
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == "/status":
            await send_json_body(send, 503, self.deployments.status())
        elif failed := next((name for name in self.deployments.failed if path.startswith(routes_of(name))), None):
            reason = self.deployments.failed[failed]
            await send_json_body(send, 503, {"detail": f"{failed} is not available: it failed to load ({reason})"})
        elif (self.deployments.done or path == "/" or path.startswith(ALWAYS_OPEN)
              or any(path.startswith(routes_of(name)) for name in tuple(self.deployments.loaded))):
            await self.app(scope, receive, send)  # a loaded deployment answers while the next ones load
        else:
            await send_json_body(send, 503, {"detail": f"the server is starting ({self.doing()}); try again shortly"},
                                 [(b"retry-after", b"5")])

    def doing(self) -> str:
        if (preparing := self.deployments.preparing) is not None:
            return f"building what a first answer needs: {preparing}"
        return f"loading {self.deployments.loading or '…'}"


def routes_of(deployment: str) -> tuple[str, ...]:
    """The path prefixes a deployment serves (the chat deployment also serves the OpenAI-compatible routes)."""
    chat = (("/v1/chat/completions", "/chat/completions", "/v1/models", "/models")
            if deployment == CHAT_DEPLOYMENT else ())
    return (f"/{deployment}/", *chat)

