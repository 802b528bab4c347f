"""`provisioning.isolated.in_child`: a set-up step in a spawned process that dies with its parent. Results, errors
and the skipped final collection are in tests/provisioning/test_quick_start.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from provisioning.isolated import in_child
from tests.support.processes import alive, descendants

ROOT = Path(__file__).resolve().parents[2]
PARENT = """
import time
from provisioning.isolated import in_child
print("submitting", flush=True)
in_child(time.sleep, 60)
"""


def test_keyword_arguments_reach_the_step_and_the_step_runs_in_a_child_of_this_process() -> None:
    assert in_child(json.dumps, {"b": 1, "a": [2]}, sort_keys=True, ensure_ascii=False) == '{"a": [2], "b": 1}'
    assert in_child(os.getppid) == os.getpid()


def test_the_child_dies_when_its_parent_is_killed() -> None:
    """A killed `make run` leaves no training running behind it (Linux: PR_SET_PDEATHSIG)."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "submitting"
        deadline = time.monotonic() + 30
        while not (workers := [pid for pid in descendants(parent.pid)
                               if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]):
            assert time.monotonic() < deadline, "no child process started"
            time.sleep(0.05)
        time.sleep(0.5)  # the child has run its initializer and sleeps in the step
    finally:
        parent.kill()
        parent.wait(10)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "the child outlived its killed parent"
        time.sleep(0.05)


def test_a_child_whose_parent_is_already_gone_exits_at_once_without_its_exit_handlers() -> None:
    probe = ("import atexit, sys\n"
             "atexit.register(print, 'exit handlers ran')\n"
             "from provisioning.isolated import _die_with_parent\n"
             "_die_with_parent(-1)\n"  # not this process's parent: it has gone, and another adopted the child
             "print('went on')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 1 and done.stdout == ""
