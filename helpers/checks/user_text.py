"""Text that came from a user, as checks and error messages treat it.

JSON lets a client send what is not text (a lone surrogate such as ``"\\ud800"``) and what shows nothing (NUL,
zero-width spaces); an error message that echoes a value must not echo a megabyte of it.

Usage::

    from helpers.checks.user_text import lone_surrogate_at, has_visible_character, shown
    lone_surrogate_at("\\ud800个人信息")   # 0
    has_visible_character("\\u200b\\x00")   # False
    shown("x" * 100)                       # "'xxx…x… (102 characters)"
"""

from __future__ import annotations

import unicodedata

# control, format (zero-width, bidi marks), unassigned, private use, separators
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp"}


def lone_surrogate_at(text: str) -> int | None:
    """The position of the first lone surrogate in ``text`` (it cannot be encoded as UTF-8), or None."""
    return next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)


def has_visible_character(text: str) -> bool:
    """Whether ``text`` shows anything: a character that is not a control, format or space character."""
    return any(unicodedata.category(c) not in _INVISIBLE_CATEGORIES for c in text)


def shown(value: object, limit: int = 40) -> str:
    """``value``'s repr for an error message, cut to ``limit`` characters (a 1 MB name is not echoed back)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
