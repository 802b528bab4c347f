"""What the server builds before its deployments load: the prepare command, as a child process started before the
server's own imports (`interfaces.startup.Deployments` waits for it in its loading thread).

This module imports only the standard library (and `helpers.processes`) at import time, so the server can start the
command first thing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Sequence

from helpers.processes.stopping import stop_process


class Preparation:
    """The server's prepare command (what ``serve`` passes: ``python -m pipelines prepare``) as a child process,
    started first thing in the server's main, so that its imports run beside the server's own; its output is passed
    through to the server's stdout as written, and its latest line is what ``/status`` shows meanwhile.

    Usage::

        preparation = Preparation([sys.executable, "-m", "pipelines", "prepare"])
        preparation.start()
        ...
        reason = preparation.finish()   # in the loading thread: None when it succeeded, else why it failed
    """

    def __init__(self, command: Sequence[str]) -> None:
        if not command:
            raise ValueError("the prepare command is empty")
        self.command = list(command)
        self.shown = shlex.join(self.command)  # as a user would type it, in the log and in a failure
        self.latest: str | None = None  # its latest output line while it runs, else None
        self.ended = threading.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.start_error: str | None = None

    def start(self) -> None:
        """Start the command (once); a command that cannot start is reported by `finish`."""
        if self.process is not None or self.start_error is not None:
            return
        self.latest = "starting"
        try:
            # unbuffered: a Python command's lines reach the log and `/status` as written, not a block at a time
            self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except OSError as error:
            self.start_error = f"`{self.shown}` did not start: {type(error).__name__}: {error}"[:300]
        from haystack import logging  # after the start: the command's imports run beside Haystack's

        logging.getLogger(__name__).info("Preparing before the deployments load: {command}", command=self.shown)

    def finish(self) -> str | None:
        """Pass the command's output through until it ends: None when it exited 0, else why it failed."""
        try:
            self.start()
            if self.process is None:
                return self.start_error
            assert self.process.stdout is not None
            pending = b""
            while chunk := self.process.stdout.read1(65536):
                try:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.buffer.flush()
                except (OSError, ValueError):  # this server's output is gone (a closed pipe): keep preparing
                    pass
                *ended, pending = (pending + chunk).replace(b"\r", b"\n").split(b"\n")
                if lines := [line for line in ended if line.strip()]:
                    self.latest = lines[-1].decode("utf-8", "replace").strip()[:200]
            if code := self.process.wait():
                return f"`{self.shown}` exited with {code}; its last line: {self.latest}"
            return None
        finally:
            self.latest = None
            self.ended.set()

    def stop(self) -> None:
        """End the command if it still runs (the server is stopping)."""
        stop_process(self.process)
