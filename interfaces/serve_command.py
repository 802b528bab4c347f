"""How the server is started, in the standard library only: its command line, its environment and the exec that
turns this process into it. Shared by the console script (`interfaces.launch`), the command line's ``serve``
(`interfaces.cli`), the server itself (its ``--host``/``--port``) and the tooling's ``prepare``.

Usage::

    command, env = serve_command("127.0.0.1", 1416, prepare_command())
    exec_server("127.0.0.1", 1416)   # this process becomes the server
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from config.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS_GROUP = "agentic_rag.cli"  # the entry point group of command-line extensions (`interfaces.cli`)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """``--host`` and ``--port`` (defaults: ``API_HOST``, ``API_PORT``), for every parser of ``serve``."""
    parser.add_argument("--host", default=Settings.value("api_host"))
    parser.add_argument("--port", type=int, default=Settings.value("api_port"))


def prepare_command() -> list[str]:
    """What the server runs before its deployments load: the tooling's ``prepare`` (`provisioning.commands`)."""
    return [sys.executable, "-m", "pipelines", "prepare"]


def serve_command(host: str, port: int, prepare: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the server (Hayhooks app + web UI, `interfaces/server_app.py`); it runs
    ``prepare`` before it loads its deployments, while it already listens."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "interfaces.server_app", "--host", host, "--port", str(port)]
    return command + (["--prepare-command", shlex.join(prepare)] if prepare else []), env


def exec_server(host: str, port: int, prepare: Sequence[str] = ()) -> None:
    """Become the server (exec): a service manager's SIGTERM, or Ctrl-C, reaches the server itself, which stops
    gracefully and stops the embedded LLM (and a running ``prepare``) with it."""
    command, env = serve_command(host, port, prepare)
    print(f"serving on http://{host}:{port}  (web UI: /ui/, OpenAI-compatible: /v1/chat/completions, model "
          "agentic_rag)" + ("; /status says 'Preparing' until what a first answer needs is built" if prepare else ""),
          flush=True)
    os.chdir(ROOT)
    os.execve(command[0], command, env)
