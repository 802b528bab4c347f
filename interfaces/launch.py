"""The ``agentic-rag`` console script, which ``python -m pipelines`` runs: ``serve`` execs the server at once, before
the command line's libraries load (Haystack, torch and qdrant-client: about 3 s that a cold ``make serve`` would
otherwise spend before its server even starts, since the server and its ``prepare`` load them again); every other
command, ``serve --no-prepare`` (which says which stack it serves) and ``serve --help`` are `interfaces.cli.main`'s.

This module imports only the standard library and `config` at import time (the server's command line is
`interfaces.serve_command`); the command line itself is imported only for the commands other than ``serve``.

Usage::

    python -m pipelines serve --port 8000
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from interfaces.serve_command import EXTENSIONS_GROUP, add_serve_arguments, exec_server, prepare_command


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
