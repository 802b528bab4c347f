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

    def leaks(self, text: str) -> bool:
        return any(text[i:i + self.window] in self._grams for i in range(len(text) - self.window + 1))

    def redact(self, text: str) -> str:
        if not self._grams:
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
                out.append(REDACTED)
            else:
                out.append(text[i])
                i += 1
        return "".join(out)

    def stream_filter(self, callback: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
        """Wraps a streaming callback: chunks are held back `WINDOW` characters and forwarding stops for good once
        the streamed text repeats a secret (the checked reply still arrives whole at the end)."""
        if callback is None or not self._grams:
            return callback
        state = {"text": "", "sent": 0, "stopped": False}

        def forward(chunk: Any) -> None:
            if state["stopped"] or not chunk.content:
                return
            state["text"] += chunk.content
            if self.leaks(state["text"]):
                state["stopped"] = True
                return
            safe_until = max(len(state["text"]) - self.window, state["sent"])
            if safe_until > state["sent"]:
                callback(replace(chunk, content=state["text"][state["sent"]:safe_until]))
                state["sent"] = safe_until

        return forward
