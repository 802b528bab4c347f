"""`helpers.processes.priority.lower_this_threads_priority`: a chosen nice value, inherited by the threads the lowered
thread starts, and False where it cannot be set (the one-thread-lowered case is in tests/helpers/test_priority.py)."""

import os
import sys
import threading

import pytest

from helpers.processes import priority
from helpers.processes.priority import lower_this_threads_priority

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def in_thread(work) -> dict:
    seen: dict = {}
    thread = threading.Thread(target=lambda: seen.update(work()))
    thread.start()
    thread.join()
    return seen


@linux_only
def test_a_chosen_niceness_is_set_and_inherited_by_the_threads_it_starts() -> None:
    before = niceness()
    wanted = min(before + 5, priority.LOWEST)

    def lowered() -> dict:
        return {"set": lower_this_threads_priority(wanted), "own": niceness(),
                "child": in_thread(lambda: {"niceness": niceness()})["niceness"]}

    assert in_thread(lowered) == {"set": True, "own": wanted, "child": wanted}
    assert niceness() == before


def test_off_linux_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """On other systems a process has one priority for all its threads: lowering one thread is not possible."""
    monkeypatch.setattr(sys, "platform", "darwin")
    before = niceness()
    assert in_thread(lambda: {"set": lower_this_threads_priority(), "niceness": niceness()}) == {
        "set": False, "niceness": before}


@linux_only
def test_a_refusal_of_the_system_is_false_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without privileges the kernel refuses to raise a priority (EPERM/EACCES); the caller goes on at its own."""
    def refuse(*args: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "setpriority", refuse)
    assert in_thread(lambda: {"set": lower_this_threads_priority(0)}) == {"set": False}
