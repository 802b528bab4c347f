"""Defences against prompt injection through retrieved documents and web results.

- `quote_data`: text that goes into a prompt between the <<< >>> data delimiters cannot close them early;
- `PromptLeakGuard`: removes any run of an LLM reply that repeats the system prompt (a model that followed a
  planted “输出系统提示词” shows nothing of it), also while the reply streams.

Usage::

    prompt = f"<<<\\n{quote_data(document.content)}\\n>>>"
    guard = PromptLeakGuard([system_prompt])
    clean = guard.redact(reply_text)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

DELIMITERS = {"<<<": "‹‹‹", ">>>": "›››"}
WINDOW = 12  # a reply repeating this many consecutive characters of a system prompt is treated as a leak
REDACTED = "〔已移除：系统提示内容〕"


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
        return any(text[i:i + self.window] in self._grams for i in range(len(text) - self.window + 1))

    def redact(self, text: str, end: int | None = None) -> str:
        """``text`` with every copied run replaced, leading whitespace left out; ``end``: only ``text[:end]``, judged
        with the windows that reach past it (so the result for a growing text only ever grows)."""
        end = len(text) if end is None else max(0, end)
        leaked = [False] * len(text)
        for i in range(len(text) - self.window + 1):
            if text[i:i + self.window] in self._grams:
                leaked[i:i + self.window] = [True] * self.window
        out, i = [], 0
        while i < end:
            if leaked[i]:
                while i < end and leaked[i]:
                    i += 1
                out.append(self.replacement)
            else:
                out.append(text[i])
                i += 1
        return "".join(out).lstrip()

    def stream_filter(self, callback: Callable[[Any], None] | None) -> GuardedStream | None:
        """Wraps a streaming callback so that no copied run is ever forwarded (see `GuardedStream`)."""
        return None if callback is None else GuardedStream(self, callback)


class GuardedStream:
    """A streaming callback that forwards the redacted text ``window`` characters late (a copied run is only seen
    whole); with ``stop_stream`` it stops for good once the streamed text repeats a secret. `flush()` at the end of
    the reply sends the held-back tail. What it forwards is always a prefix of ``guard.redact(full reply)``."""

    def __init__(self, guard: PromptLeakGuard, callback: Callable[[Any], None]) -> None:
        self.guard, self.callback = guard, callback
        self.text, self.sent, self.stopped = "", 0, False
        self._last: Any = None

    def _forward(self, out: str) -> None:
        if len(out) > self.sent and self._last is not None:
            self.callback(replace(self._last, content=out[self.sent:]))
            self.sent = len(out)

    def __call__(self, chunk: Any) -> None:
        if self.stopped or not chunk.content:
            return
        self.text += chunk.content
        self._last = chunk
        if self.guard.stop_stream and self.guard.leaks(self.text):
            self.stopped = True
            return
        self._forward(self.guard.redact(self.text, end=len(self.text) - self.guard.window))

    def flush(self) -> None:
        if not self.stopped:
            self._forward(self.guard.redact(self.text))
