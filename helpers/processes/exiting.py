"""Ending a short-lived process without the interpreter's final garbage collection.

With Haystack, torch and a model loaded, that collection walked every object for one to two seconds after the
process had done its work (a spawned set-up child: 2.2 s → 0.2 s; ``python -m pipelines prepare``: 1.2 s → 0.2 s,
both measured beside a benchmark on 2 cores). Whoever waits for such a process (the server for its ``prepare``, the
set-up for each child step) waited for that too.

Usage::

    skip_final_collection_at_exit()  # early in a command-line process or a child's initializer
"""

from __future__ import annotations

import atexit
import gc


def skip_final_collection_at_exit() -> None:
    """Freeze every object (into the permanent generation, which no collection walks) in an exit handler. Exit
    handlers run in reverse order, so this one runs after those registered later (an embedded LLM's stop); what
    must be written is written by then (stores are closed and flushed by the code that opened them). Objects in
    reference cycles are left to the operating system with the rest of the process's memory."""
    atexit.register(gc.freeze)
