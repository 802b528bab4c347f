"""The embedded llama.cpp server: an OpenAI-compatible chat endpoint on 127.0.0.1, started when needed.

Usage::

    from llm_access.embedded_server import EmbeddedLLMServer
    with EmbeddedLLMServer(gguf_path="models/qwen.gguf") as server:
        print(server.base_url)  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Self

from haystack import logging

from helpers.processes.stopping import stop_process

logger = logging.getLogger(__name__)

MODEL_ALIAS = "local"


class LLMServerError(RuntimeError):
    """The embedded LLM server could not be started or did not become ready."""


def free_port() -> int:
    """Ask the OS for a free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedLLMServer:
    """Runs ``python -m llama_cpp.server`` as a child process and stops it cleanly.

    The server speaks the OpenAI chat protocol (plain chat, ``response_format`` JSON mode and, with the
    ``chatml-function-calling`` chat format, ``tools``). ``logprobs`` only when started with ``logprobs=True``:
    llama.cpp then keeps the logits of every prompt token, ~1.1 GiB more at its peak and slower prompts
    (`research/reports/llm_logits_probe.md`), which only the LLM reranker needs.
    """

    def __init__(
        self,
        gguf_path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        start_timeout: float = 180.0,
        log_path: str | Path | None = None,
        logprobs: bool = False,
    ) -> None:
        self.gguf_path = Path(gguf_path)
        self.logprobs = logprobs
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.start_timeout = start_timeout
        self.log_path = Path(log_path) if log_path else None
        self.port: int | None = None
        self._process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LLMServerError("The embedded LLM server is not running.")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process is not None else None

    @property
    def exit_code(self) -> int | None:
        """The code of a server process that ended by itself (a crash, an out-of-memory kill); None otherwise."""
        return self._process.poll() if self._process is not None else None

    def start(self, port: int | None = None) -> EmbeddedLLMServer:
        """Start the server (on ``port``, else a free one) and wait until ``/v1/models`` answers; raise
        `LLMServerError` on failure."""
        if self.running:
            return self
        if not self.gguf_path.is_file():
            raise LLMServerError(
                f"GGUF model not found at {self.gguf_path}. Run `python -m pipelines setup` to assemble it, "
                "or set LLM_GGUF, LLM_BASE_URL or DEEPSEEK_API_KEY."
            )
        self.port = port or free_port()
        command = [
            sys.executable, "-m", "llm_access.server_child", str(os.getpid()), "llama_cpp.server",  # dies with us
            "--model", str(self.gguf_path),
            "--model_alias", MODEL_ALIAS,
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--chat_format", "chatml-function-calling",
            # by default a streamed answer stops as soon as another request waits for the model: a judge call of
            # one user would cut another user's answer short
            "--interrupt_requests", "False",
            # llama.cpp keeps the logits of every prompt token only to return logprobs (the LLM reranker's P(是))
            "--logits_all", str(self.logprobs),
            "--host", "127.0.0.1",
            "--port", str(self.port),
        ]
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        logger.info("Starting embedded LLM server on port {port}", port=self.port)
        try:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            if log is not subprocess.DEVNULL:
                log.close()  # the child has its own copy of the descriptor
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise LLMServerError(
                    f"The embedded LLM server exited with code {self._process.returncode} during start-up"
                    + (f"; see {self.log_path}" if self.log_path else "")
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200 and json.loads(response.read()).get("data") is not None:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.5)
        raise LLMServerError(
            f"The embedded LLM server did not answer within {self.start_timeout:.0f} s "
            "(raise LLM_START_TIMEOUT on a slow machine)."
        )

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout`` seconds)."""
        process, self._process = self._process, None
        if stop_process(process, timeout):
            logger.info("Embedded LLM server stopped")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# The one embedded server of this process. Lifetime: started on first use, restarted in place if its process dies,
# stopped at interpreter exit (atexit; the server app exits through Python on SIGTERM for this).
_shared: EmbeddedLLMServer | None = None
_shared_lock = threading.Lock()


def _restart_in_place(server: EmbeddedLLMServer) -> bool:
    """Start a server whose process ended by itself again on its old port (generators built earlier hold that URL);
    True if it runs again. A server stopped on purpose is left alone."""
    if server.exit_code is None or server.port is None:
        return False
    logger.warning("The embedded LLM server exited with code {code}; restarting it on port {port}",
                   code=server.exit_code, port=server.port)
    try:
        server.start(port=server.port)
    except LLMServerError as error:
        logger.warning("Restarting the embedded LLM server failed: {error}", error=str(error))
        return False
    return True


def _restart_on_port(server: EmbeddedLLMServer, why: str, stop_timeout: float = 10.0) -> bool:
    """Stop a running server and start it again on its port (generators built earlier hold that URL); True if it
    runs again."""
    port = server.port
    logger.info("Restarting the embedded LLM server on port {port} {why}", port=port, why=why)
    server.stop(timeout=stop_timeout)
    try:
        server.start(port=port)
    except LLMServerError as error:
        logger.warning("Restarting the embedded LLM server failed: {error}", error=str(error))
        return False
    return True


def revive_shared_server(base_url: str | None) -> bool:
    """Restart the shared server if it is the one behind ``base_url`` and its process died; True if it runs now
    (also when another request revived it while this one waited for the lock: its call is worth one more try)."""
    with _shared_lock:
        if _shared is None or _shared.port is None or base_url != _shared.base_url:
            return False
        return _shared.running or _restart_in_place(_shared)


def abort_shared_generation(base_url: str | None) -> bool:
    """Stop what the shared server is generating for a caller that gave up on it (a timed-out call); True if it
    was restarted.

    llama.cpp's server stops a streamed generation when its client leaves, but not one it answers in a single
    response: that runs to its token limit, with both cores busy and every other request waiting behind it. It has
    no abort endpoint, so the server is restarted on its own port (seconds: the model is mapped from the page
    cache); requests that arrive meanwhile are retried once by the call policy (see `revive_shared_server`)."""
    with _shared_lock:
        if _shared is None or _shared.port is None or base_url != _shared.base_url or not _shared.running:
            return False
        logger.warning("Stopping a generation nobody waits for on the embedded LLM server (port {port})",
                       port=_shared.port)
        # a graceful stop would wait for the very generation to finish
        return _restart_on_port(_shared, "to stop a generation nobody waits for", stop_timeout=1)


def shared_server(gguf_path: str | Path, *, logprobs: bool = False, **kwargs: object) -> EmbeddedLLMServer:
    """The one embedded server of this process, started on first use (again on its port if it died) and stopped
    at interpreter exit. It returns ``logprobs`` once a caller has asked for them: a server started without is
    restarted on its port with them (seconds: the model is mapped from the page cache)."""
    global _shared
    with _shared_lock:
        if _shared is not None and not _shared.running and not _restart_in_place(_shared):
            _shared = None
        if _shared is not None and logprobs and not _shared.logprobs:
            _shared.logprobs = True
            if not _restart_on_port(_shared, "with logprobs (an LLM reranker reads them)"):
                _shared = None
        if _shared is None:
            _shared = EmbeddedLLMServer(gguf_path, logprobs=logprobs, **kwargs).start()  # type: ignore[arg-type]
            atexit.register(_shared.stop)
        return _shared


def stop_shared_server(timeout: float = 10.0) -> None:
    """Stop the shared server now (its memory back before long work such as training; a server shutting down);
    killed after ``timeout`` seconds (a generation in flight would hold a graceful stop). The next `shared_server`
    call starts a new one."""
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop(timeout=timeout)
            _shared = None
