"""The server as a child process, started and waited for until every deployment answers (tests, benchmarks).

Usage::

    with ServerProcess({"DATA_DIR": "/tmp/data", "LLM_BASE_URL": "http://127.0.0.1:8080/v1"}) as server:
        httpx.post(f"{server.base_url}/agentic_rag/run", json={"query": "…", "mode": "retrieve"})
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from helpers.processes.stopping import stop_process
from interfaces.serve_command import serve_command
from llm_access.embedded_server import free_port

DEPLOYMENTS = frozenset({"agentic_rag", "index", "knowledge_bases"})


class ServerStartError(RuntimeError):
    pass


class ServerProcess:
    """Starts `python -m interfaces.server_app` (``via_cli``: `python -m pipelines serve`) on 127.0.0.1 with ``env``
    added to this process's environment (a value of None removes that variable)."""

    def __init__(self, env: dict[str, str | None] | None = None, log_path: Path | None = None, timeout: float = 180.0,
                 headers: dict[str, str] | None = None, via_cli: bool = False) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env, self.timeout, self.headers = env or {}, timeout, headers or {}
        self.log_path = log_path or Path(tempfile.mkdtemp()) / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds = 0.0
        self.via_cli = via_cli  # start it as users do, `python -m pipelines serve`

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def __enter__(self) -> Self:
        command, env = serve_command("127.0.0.1", self.port)
        if self.via_cli:
            command = [sys.executable, "-m", "pipelines", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        started = time.perf_counter()
        with open(self.log_path, "wb") as log:
            # its own process group, as a terminal gives a foreground command (Ctrl-C reaches the whole group)
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerStartError(f"server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                status = httpx.get(f"{self.base_url}/status", timeout=2).json()
                if DEPLOYMENTS <= set(status.get("pipelines", [])):
                    self.startup_seconds = time.perf_counter() - started
                    return self
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        self.stop()
        raise ServerStartError(f"server did not deploy {sorted(DEPLOYMENTS)} in {self.timeout:.0f} s:\n"
                               f"{self.log_tail()}")

    def stop(self) -> None:
        stop_process(self.process, timeout=30)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
