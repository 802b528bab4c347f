"""Tolerant JSON extraction from LLM replies (code fences, prose around the object, trailing commas).

Usage::

    from helpers.checks.llm_json import parse_json_object
    parse_json_object('好的：```json\\n{"route": "chitchat",}\\n```')   # {'route': 'chitchat'}
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
# a string (kept as it is) or a comma before a closing bracket (dropped): strings are matched first, so a ", ]"
# inside a value is never edited
_STRING_OR_TRAILING_COMMA_RE = re.compile(r'("(?:[^"\\]|\\.)*")|,\s*([}\]])', re.DOTALL)


def _without_trailing_commas(span: str) -> str:
    return _STRING_OR_TRAILING_COMMA_RE.sub(lambda m: m.group(1) or m.group(2), span)


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span, respecting strings."""
    spans, depth, start, in_string, escape = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:  # the character after a backslash is escaped, whatever it is
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def parse_json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object found in ``text``, or None when there is none."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCE_RE.finditer(text)] + [text]
    for candidate in candidates:
        for span in _balanced_objects(candidate):
            for attempt in (span, _without_trailing_commas(span)):
                try:
                    value = json.loads(attempt)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value
    return None
