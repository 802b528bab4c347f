"""Run a memory-hungry set-up step in a process of its own, so its memory is returned when it ends.

Indexing the corpus, fine-tuning and the ONNX export each take a few GiB at their peak. Run one after another in
one process, which keeps what Python freed, they stacked up to 9.4 GiB. In a fresh process (spawned: nothing of the
parent's heap is copied) each step's peak is its own.

Usage::

    seconds = in_child(fine_tune, base, rows, out, recipe)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from helpers.processes.exiting import skip_final_collection_at_exit

T = TypeVar("T")


PR_SET_PDEATHSIG = 1


def in_child(function: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``function(*args, **kwargs)`` in a spawned child process; its result, or its exception, comes back (both
    must pickle). ``function`` must be importable by name (a module-level function). The child dies with this
    process (a killed `make run` leaves no training behind)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
        return pool.submit(function, *args, **kwargs).result()


def _die_with_parent(parent: int) -> None:
    """In the child: be killed when the parent dies (Linux ``PR_SET_PDEATHSIG``), and exit at once if it is
    already gone."""
    if sys.platform.startswith("linux") and (libc := ctypes.util.find_library("c")):
        ctypes.CDLL(libc).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
    skip_final_collection_at_exit()  # the parent's pool waits for this process's exit
