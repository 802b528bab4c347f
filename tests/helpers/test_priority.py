"""`helpers.processes.priority`: one thread yields the CPU, the rest of the process keeps its priority."""

import os
import sys
import threading

import pytest

from helpers.processes.priority import LOWEST, lower_this_threads_priority


def niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_only_the_calling_thread_is_lowered():
    before, seen = niceness(), {}

    def background() -> None:
        seen["set"] = lower_this_threads_priority()
        seen["niceness"] = niceness()

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    assert seen == {"set": True, "niceness": LOWEST}
    assert niceness() == before  # the caller of the thread keeps its own
