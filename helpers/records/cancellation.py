"""Cancelling a run from another thread: a client that disconnected stops its pipeline and its LLM stream.

Usage::

    cancel = Cancellation()
    rag.ask(question, streaming_callback=lambda chunk: (cancel.check(), print(chunk.content)), cancel=cancel)
    cancel.cancel()   # from another thread: the run raises `RunCancelled` at its next check
"""

from __future__ import annotations

import threading


class RunCancelled(Exception):
    """The caller of a run went away (a client that disconnected): the run stopped at a stage boundary, or its
    LLM stream stopped at the next chunk."""


class Cancellation:
    """A flag one thread sets and a run checks: at every stage boundary of `application.steps.run_with_steps`
    and, through `check` in a streaming callback, at every chunk the LLM sends."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def check(self) -> None:
        """Raise `RunCancelled` once `cancel` was called."""
        if self._event.is_set():
            raise RunCancelled("the run was cancelled: its caller went away")
