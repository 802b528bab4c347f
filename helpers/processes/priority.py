"""Work that should take only the CPU nobody else wants: the lowest priority for the calling thread.

On Linux a thread is a task with a nice value of its own, so one thread of a process can yield to the rest of the
machine while the process's other threads keep theirs.

Usage::

    def preload() -> None:
        lower_this_threads_priority()
        ...  # imports that are needed later, not now
"""

from __future__ import annotations

import os
import sys
import threading

LOWEST = 19  # the highest nice value: scheduled when a core would otherwise idle


def lower_this_threads_priority(niceness: int = LOWEST) -> bool:
    """Give the calling thread the nice value ``niceness`` (it can only go up without privileges, and threads it
    starts inherit it); whether it was set (False off Linux, where a process has one priority for all its threads,
    or when the system refuses)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
    except OSError:
        return False
    return True
