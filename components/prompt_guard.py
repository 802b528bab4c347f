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
    """Finds and removes runs of at least `WINDOW` characters copied from any of ``secrets``."""

    def __init__(self, secrets: list[str], window: int = WINDOW) -> None:
        self.window = window
        self._grams = {s[i:i + window] for s in secrets for i in range(len(s) - window + 1)}

    @property
    def active(self) -> bool:
        return bool(self._grams)

    def leaks(self, text: str) -> bool:
        return any(text[i:i + self.window] in self._grams for i in range(len(text) - self.window + 1))

    def redact(self, text: str, replacement: str = REDACTED) -> str:
        """``text`` with every copied run replaced by ``replacement``."""
        if not self.active:
            return text
        leaked = [False] * len(text)
        for i in range(len(text) - self.window + 1):
            if text[i:i + self.window] in self._grams:
                leaked[i:i + self.window] = [True] * self.window
        out, i = [], 0
        while i < len(text):
            if leaked[i]:
                while i < len(text) and leaked[i]:
                    i += 1
                out.append(replacement)
            else:
                out.append(text[i])
                i += 1
        return "".join(out)

    def stream_filter(self, callback: Callable[[Any], None] | None) -> GuardedStream | None:
        """Wraps a streaming callback so that no leak is ever forwarded (see `GuardedStream`)."""
        return None if callback is None else GuardedStream(self, callback)


class GuardedStream:
    """A streaming callback that forwards chunks `WINDOW` characters late and stops for good once the streamed text
    repeats a secret; `flush()` at the end of the reply sends the held-back tail when nothing leaked."""

    def __init__(self, guard: PromptLeakGuard, callback: Callable[[Any], None]) -> None:
        self.guard, self.callback = guard, callback
        self.text, self.sent, self.stopped = "", 0, False
        self._last: Any = None

    def _send_until(self, end: int) -> None:
        if end > self.sent and self._last is not None:
            self.callback(replace(self._last, content=self.text[self.sent:end]))
            self.sent = end

    def __call__(self, chunk: Any) -> None:
        if self.stopped or not chunk.content:
            return
        self.text += chunk.content
        self._last = chunk
        if self.guard.leaks(self.text):
            self.stopped = True
            return
        self._send_until(len(self.text) - self.guard.window)

    def flush(self) -> None:
        if not self.stopped:
            self._send_until(len(self.text))
