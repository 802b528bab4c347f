"""Stopping a child process: SIGTERM, then SIGKILL when it has not ended in time.

Usage::

    stop_process(process, timeout=10)
"""

from __future__ import annotations

import subprocess


def stop_process(process: subprocess.Popen | None, timeout: float = 10.0) -> bool:
    """Terminate ``process`` if it still runs and wait for it, killing it after ``timeout`` seconds; whether it was
    running."""
    if process is None or process.poll() is not None:
        return False
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
    return True
