"""`helpers.processes.stopping.stop_process` on real child processes."""

import subprocess
import sys

from helpers.processes.stopping import stop_process


def test_a_child_that_ignores_sigterm_is_killed_after_the_timeout():
    ignores_sigterm = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                       "print('ready', flush=True); time.sleep(600)")
    child = subprocess.Popen([sys.executable, "-c", ignores_sigterm], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"  # its handler is set
    assert stop_process(child, timeout=0.5) is True
    assert child.returncode == -9


def test_an_ended_or_absent_process_is_left_alone():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert stop_process(done) is False and stop_process(None) is False
