"""The ``agentic-rag`` console script, which ``python -m pipelines`` runs: ``serve`` execs the server at once, before
the command line's libraries load (Haystack, torch and qdrant-client: about 3 s that a cold ``make serve`` would
otherwise spend before its server even starts, since the server and its ``prepare`` load them again); every other
command, ``serve --no-prepare`` (which says which stack it serves) and ``serve --help`` are `interfaces.cli.main`'s.

This module imports only the standard library and `config` at import time.

Usage::

    python -m pipelines serve --port 8000
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS_GROUP = "agentic_rag.cli"  # the entry point group of command-line extensions (`interfaces.cli`)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """``--host`` and ``--port`` (defaults: ``API_HOST``, ``API_PORT``), for every parser of ``serve``."""
    parser.add_argument("--host", default=os.environ.get("API_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("API_PORT", "1416")))


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


def tooling_installed() -> bool:
    """Whether a command-line extension (the tooling that offers ``prepare``) is installed, without loading it."""
    return bool(entry_points(group=EXTENSIONS_GROUP))


def quick_serve(argv: Sequence[str]) -> bool:
    """Exec the server for ``serve [--host H] [--port P]`` with the tooling installed; False for anything else."""
    if list(argv[:1]) != ["serve"] or not tooling_installed():
        return False
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    add_serve_arguments(parser)
    try:
        args, rest = parser.parse_known_args(list(argv[1:]))
    except argparse.ArgumentError:
        return False
    if rest:  # --no-prepare, --help, or a mistake the full command line reports
        return False
    exec_server(args.host, args.port, prepare_command())
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (default: the process's arguments); the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from config.settings import load_env_file
    from helpers.processes.exiting import skip_final_collection_at_exit

    load_env_file()  # before the defaults of --host and --port are read, as the server reads it
    if quick_serve(argv):
        return 0  # not reached: the server replaced this process
    skip_final_collection_at_exit()  # the server waits for `prepare` to end; so does a shell
    from interfaces.cli import main as cli_main

    try:
        code = cli_main(argv)
        sys.stdout.flush()  # a closed pipe shows here rather than in the interpreter's last flush
    except BrokenPipeError:  # the reader stopped early (`laws | head -1`): no traceback, the shell's exit code
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more goes to the closed pipe
        return 128 + signal.SIGPIPE
    return code
