"""The HTTP server's process: ``python -m interfaces.server_app`` (what ``python -m pipelines serve`` execs) runs
the app (`interfaces.app_factory.create_server_app`) under uvicorn, with the embedded LLM started early, a
``prepare`` command beside it, a drain on SIGTERM (`interfaces.draining`) and its record beside the store
(`interfaces.server_record`).

The API routes are Hayhooks' (``/status``, ``/{deployment}/run``, ``/v1/chat/completions``) plus ``GET /index/jobs``
(`interfaces.index_jobs_api`), ``POST /feedback`` (`interfaces.feedback_api`) and ``/docs`` served offline; the UI
is static files that call those same routes.

Usage::

    python -m pipelines serve                      # 127.0.0.1:1416, see `serve --help`
    python -m interfaces.server_app --port 8000     # the same, without the CLI
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from config.offline import apply_offline_defaults

apply_offline_defaults()  # before anything imports Haystack (`python -m interfaces.server_app` skips the CLI)

from interfaces.app_factory import create_server_app
from interfaces.preparation import Preparation
from interfaces.serve_command import add_serve_arguments
from interfaces.torch_blocker import keep_torch_out

if TYPE_CHECKING:
    from config.settings import Settings

STARTUP_FAILED_EXIT_CODE = 3  # a required deployment failed to load (uvicorn's own code for a failed start-up)


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
