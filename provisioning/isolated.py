"""Run a memory-hungry set-up step in a process of its own, so its memory is returned when it ends.

Fine-tuning and the ONNX export each take a few GiB at their peak. Run inside the process that has just indexed
the corpus (whose freed memory Python keeps), they stacked up to 9.4 GiB. In a fresh process (spawned: nothing of
the parent's heap is copied) each step's peak is its own, and the parent's stays what indexing needs.

Usage::

    seconds = in_child(fine_tune, base, rows, out, recipe)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def in_child(function: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``function(*args, **kwargs)`` in a spawned child process; its result, or its exception, comes back (both
    must pickle). ``function`` must be importable by name (a module-level function)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args, **kwargs).result()


def release_memory() -> None:
    """Collect garbage and hand the freed heap back to the system (glibc's ``malloc_trim``; a no-op elsewhere)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass
