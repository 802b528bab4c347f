"""`CheckedStream`: a streaming callback that checks an answer as it streams (`helpers.checks.answer_check`).

Usage::

    from helpers.checks.answer_check import AnswerChecker
    from helpers.checks.checked_stream import CheckedStream
    stream = CheckedStream(AnswerChecker(evidence, query), print_chunk)
    # pass ``stream`` as the generator's streaming callback, then:
    stream.flush()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from helpers.checks.answer_check import AnswerChecker


class CheckedStream:
    """A streaming callback that forwards the checked text of each completed line (`AnswerChecker.feed`), so a
    streamed answer shows statute text from the store and the same flags as the final one; `flush()` at the end
    sends the rest."""

    def __init__(self, checker: AnswerChecker, callback: Callable[[Any], None]) -> None:
        self.checker, self.callback = checker, callback
        self._last: Any = None

    def _forward(self, text: str) -> None:
        if text and self._last is not None:
            self.callback(replace(self._last, content=text))

    def __call__(self, chunk: Any) -> None:
        if chunk.content:
            self._last = chunk
            self._forward(self.checker.feed(chunk.content))

    def flush(self, cut_off: bool = False) -> None:
        self._forward(self.checker.finish(cut_off))
