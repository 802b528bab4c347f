"""`helpers.processes.stopping.stop_process` on real children that end on SIGTERM (a child that ignores it, and an
ended or absent one, are in tests/helpers/test_processes.py)."""

import subprocess
import sys
import time

from helpers.processes.stopping import stop_process


def start(code: str) -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-c", code + "\nprint('ready', flush=True)\ntime.sleep(600)"],
                             stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    return child


def test_a_child_ends_by_sigterm_without_waiting_for_the_timeout() -> None:
    child = start("import time")
    started = time.monotonic()
    assert stop_process(child, timeout=30) is True
    assert child.returncode == -15 and time.monotonic() - started < 10  # SIGTERM, not the kill after 30 s


def test_a_child_that_cleans_up_on_sigterm_is_let_finish() -> None:
    """A child's SIGTERM handler (a server closing its store) runs to its end: its own exit code is kept."""
    child = start("import signal, sys, time\n"
                  "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(0.3), print('closed', flush=True), "
                  "sys.exit(3)))")
    assert stop_process(child, timeout=10) is True
    assert child.returncode == 3
    assert child.stdout is not None and child.stdout.read() == b"closed\n"
    assert stop_process(child) is False  # ended now: nothing more to do
