"""Run a memory-hungry set-up step in a process of its own, so its memory is returned when it ends.

Indexing the corpus, fine-tuning and the ONNX export each take a few GiB at their peak. Run one after another in
one process, which keeps what Python freed, they stacked up to 9.4 GiB. In a fresh process (spawned: nothing of the
parent's heap is copied) each step's peak is its own.

Usage::

    seconds = in_child(fine_tune, base, rows, out, recipe)
"""

from __future__ import annotations

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
