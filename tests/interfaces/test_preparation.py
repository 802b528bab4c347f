"""`interfaces.preparation.Preparation`: the server's prepare command as a real child process."""

import sys

import pytest

from interfaces.preparation import Preparation


def test_its_output_passes_through_and_a_failure_says_the_exit_code_and_the_last_line(capfd):
    preparation = Preparation([sys.executable, "-c", ("import sys; print('step 1', flush=True); "
                                                      "print('disk full', flush=True); sys.exit(4)")])
    preparation.start()
    reason = preparation.finish()
    assert reason is not None and reason.endswith("exited with 4; its last line: disk full")
    assert capfd.readouterr().out == "step 1\ndisk full\n"
    assert preparation.ended.is_set() and preparation.latest is None


def test_one_that_succeeds_gives_no_reason_and_one_that_cannot_start_says_why():
    assert Preparation([sys.executable, "-c", "pass"]).finish() is None
    missing = Preparation(["/nonexistent/prepare"])
    missing.start()
    reason = missing.finish()
    assert reason is not None and "did not start: FileNotFoundError" in reason and missing.ended.is_set()


def test_stop_ends_a_command_that_still_runs_and_an_empty_command_is_refused():
    preparation = Preparation([sys.executable, "-c", "import time; time.sleep(600)"])
    preparation.start()
    preparation.stop()
    assert preparation.process is not None and preparation.process.poll() is not None
    with pytest.raises(ValueError, match="empty"):
        Preparation([])


def test_a_closed_output_does_not_stop_the_preparation(monkeypatch):
    """The server's stdout may be a pipe its reader closed: the command still runs to its end."""
    import io

    closed = io.TextIOWrapper(io.BytesIO())
    closed.close()
    monkeypatch.setattr(sys, "stdout", closed)
    preparation = Preparation([sys.executable, "-c", "print('built', flush=True)"])
    assert preparation.finish() is None


def test_a_line_printed_without_flush_is_its_latest_while_it_still_runs(monkeypatch):
    """`/status` shows the latest line while `prepare` runs; a Python child writing into a pipe used to hold its
    lines in a buffer until it ended (a cold `serve` said "starting" through the whole ONNX export)."""
    import threading
    import time

    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # as a server started from a plain shell has it
    preparation = Preparation([sys.executable, "-c", "import time; print('exporting'); time.sleep(30)"])
    preparation.start()
    threading.Thread(target=preparation.finish, daemon=True).start()
    try:
        deadline = time.monotonic() + 20
        while preparation.latest != "exporting" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert preparation.latest == "exporting"
    finally:
        preparation.stop()
