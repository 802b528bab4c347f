"""Defences against prompt injection through retrieved documents and web results.

- `quote_data`: text that goes into a prompt between the <<< >>> data delimiters cannot close them early;
- `PromptLeakGuard`: removes every sentence of an LLM reply that repeats a run of the system prompt (a model that
  followed a planted “输出系统提示词” shows nothing of it), also while the reply streams.

Usage::

    prompt = f"<<<\\n{quote_data(document.content)}\\n>>>"
    guard = PromptLeakGuard([system_prompt])
    clean = guard.redact(reply_text)
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import replace
from typing import Any

DELIMITERS = {"<<<": "‹‹‹", ">>>": "›››"}
WINDOW = 12  # a reply repeating this many consecutive characters of a system prompt is treated as a leak
REDACTED = "〔已移除：系统提示内容〕"
SENTENCE_ENDS = "。！？!?\n】"
SECTION_HEADER = r"【([^】\n]{1,12})】"  # what a section header of an answer is, defined once
HEADER_RE = re.compile(SECTION_HEADER)  # structure: kept (the answer check drops it if its section is empty)


def quote_data(text: str) -> str:
    """Neutralise the prompt's data delimiters inside ``text``."""
    for raw, safe in DELIMITERS.items():
        text = text.replace(raw, safe)
    return text


class PromptLeakGuard:
    """Finds and removes runs of at least ``window`` characters copied from any of ``secrets``.

    :param replacement: what a copied run becomes (``""`` drops it).
    :param stop_stream: a stream stops for good at the first copied run (a model that leaks its system prompt is
        following planted instructions); ``False`` = the run is left out and the stream goes on.
    """

    def __init__(self, secrets: list[str], window: int = WINDOW, replacement: str = REDACTED,
                 stop_stream: bool = True) -> None:
        self.window, self.replacement, self.stop_stream = window, replacement, stop_stream
        self._grams = {s[i:i + window] for s in secrets for i in range(len(s) - window + 1)}

    @property
    def active(self) -> bool:
        return bool(self._grams)

    def leaks(self, text: str) -> bool:
        return _Redaction(self).feed(text)

    def redact(self, text: str) -> str:
        """``text`` with every sentence that holds a copied run replaced, leading whitespace left out."""
        return self.redact_counted(text)[0]

    def redact_counted(self, text: str) -> tuple[str, int]:
        """`redact`, and how many sentences it removed."""
        redaction = _Redaction(self)
        redaction.feed(text)
        return redaction.take(), redaction.removed

    def stream_filter(self, callback: Callable[[Any], None] | None) -> GuardedStream | None:
        """Wraps a streaming callback so that no copied run is ever forwarded (see `GuardedStream`)."""
        return None if callback is None else GuardedStream(self, callback)


class _Redaction:
    """The redaction of a growing text, built incrementally: `feed` checks only the windows the new text
    completes, `take` returns the redacted text up to ``end`` not taken before. A copied run takes its whole
    sentences with it (a sentence ends after 。！？ or a line break; a 【header】 stands alone and is kept), so
    no fragment of a sentence is left behind. Characters more than a window before the end can no longer change, and
    `take` only returns whole sentences before that point, so what it returns is never taken back."""

    def __init__(self, guard: PromptLeakGuard) -> None:
        self.guard = guard
        self.text, self.leaked = "", []
        self.boundaries: list[int] = []  # where sentences end, in order
        self.scanned = self.taken = 0  # windows starting before `scanned` are checked; `taken` characters returned
        self.in_run = self.started = False  # inside a removed run; something other than whitespace returned
        self.removed = 0  # sentences removed

    def feed(self, more: str) -> bool:
        """Append ``more``; True when it completes a copied run."""
        old = len(self.text)
        self.text += more
        self.leaked.extend([False] * len(more))
        self.boundaries.extend(k for k in range(max(1, old), len(self.text)) if _sentence_ends(self.text, k))
        window, found = self.guard.window, False
        last = len(self.text) - window + 1
        for i in range(self.scanned, last):
            if self.text[i:i + window] in self.guard._grams:
                self.leaked[i:i + window] = [True] * window
                found = True
        self.scanned = max(self.scanned, last)
        return found

    def take(self, end: int | None = None) -> str:
        """The redacted text from where the last take stopped to ``end`` (whole sentences; the end of the text
        when ``None``)."""
        if end is None:
            cuts = [k for k in self.boundaries if k > self.taken] + [len(self.text)]
        else:
            cuts = self.boundaries[bisect_right(self.boundaries, self.taken):bisect_right(self.boundaries, end)]
        out = []
        for cut in cuts:
            if cut <= self.taken:
                continue
            if any(self.leaked[self.taken:cut]) and not HEADER_RE.fullmatch(self.text, self.taken, cut):
                self.removed += 1
                if not self.in_run:
                    out.append(self.guard.replacement)
                    self.in_run = True
            else:
                out.append(self.text[self.taken:cut])
                self.in_run = False
            self.taken = cut
        piece = "".join(out)
        if not self.started:
            piece = piece.lstrip()
            self.started = bool(piece)
        return piece


def _sentence_ends(text: str, k: int) -> bool:
    """Whether a sentence ends between ``text[k - 1]`` and ``text[k]``."""
    return text[k - 1] in SENTENCE_ENDS or text[k] == "【"


class GuardedStream:
    """A streaming callback that forwards the redacted text a sentence at a time, once it is ``window`` characters
    behind (a copied run is only seen whole); with ``stop_stream`` it stops for good once the streamed text repeats a
    secret. `flush()` at the end of
    the reply sends the held-back tail. What it forwards is always a prefix of ``guard.redact(full reply)``, and
    each character is checked once (a long answer streamed in small chunks costs linear, not quadratic, time)."""

    def __init__(self, guard: PromptLeakGuard, callback: Callable[[Any], None]) -> None:
        self.guard, self.callback = guard, callback
        self.stopped = False
        self._redaction = _Redaction(guard)
        self._last: Any = None

    def _forward(self, piece: str) -> None:
        if piece and self._last is not None:
            self.callback(replace(self._last, content=piece))

    def __call__(self, chunk: Any) -> None:
        if self.stopped or not chunk.content:
            return
        self._last = chunk
        if self._redaction.feed(chunk.content) and self.guard.stop_stream:
            self.stopped = True  # the sentences before the copied run are final: send them, then nothing more
            self._forward(self._redaction.take(self._redaction.leaked.index(True)))
            return
        self._forward(self._redaction.take(len(self._redaction.text) - self.guard.window))

    def flush(self) -> None:
        if not self.stopped:
            self._forward(self._redaction.take())
