"""Cancelling a run from another thread: a client that disconnected, or a server shutting down, stops its pipeline
and every LLM call it has in flight.

The run's `Cancellation` is also the *current* one of its context (`cancelling`): the HTTP layer sets it for each
request, and the LLM call policy (`llm_access.call_policy`) reads it with `current_cancellation`, so a call deep in a
pipeline stops without the cancellation being passed through every component.

Usage::

    cancel = Cancellation()
    with cancelling(cancel):
        rag.ask(question, cancel=cancel)       # the LLM calls inside see `current_cancellation()`
    cancel.cancel("the client disconnected")   # from another thread: the run raises `RunCancelled`
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

DEFAULT_REASON = "its caller went away"


class RunCancelled(Exception):
    """The caller of a run went away (a client that disconnected) or the server is stopping: the run stopped at a
    stage boundary, or its LLM call stopped."""


class Cancellation:
    """A flag one thread sets and a run checks: at every stage boundary of `application.steps.run_with_steps`,
    before every LLM call and at every chunk the LLM sends. ``on_cancel`` callbacks let an LLM call that waits
    for its first token stop at once."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._reason = DEFAULT_REASON
        self._callbacks: list[Callable[[], None]] = []

    def cancel(self, reason: str = DEFAULT_REASON) -> None:
        """Set the flag (the first reason is kept) and call the ``on_cancel`` callbacks once, in this thread."""
        with self._lock:
            if self._event.is_set():
                return
            self._reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    @property
    def reason(self) -> str:
        return self._reason

    def check(self) -> None:
        """Raise `RunCancelled` once `cancel` was called."""
        if self._event.is_set():
            raise RunCancelled(f"the run was cancelled: {self._reason}")

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when cancelled (now, if already); returns what unregisters it. Callbacks run in the
        cancelling thread (an event loop, maybe): they must return at once."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


_CURRENT: ContextVar[Cancellation | None] = ContextVar("current_cancellation", default=None)


def current_cancellation() -> Cancellation | None:
    """The cancellation of the run this code belongs to (set by `cancelling`; None outside one)."""
    return _CURRENT.get()


@contextmanager
def cancelling(cancel: Cancellation | None) -> Iterator[Cancellation | None]:
    """Make ``cancel`` the current cancellation inside the block (threads started with the context copied, such
    as ``asyncio.to_thread`` and Starlette's thread pool, see it too)."""
    token = _CURRENT.set(cancel)
    try:
        yield cancel
    finally:
        _CURRENT.reset(token)
