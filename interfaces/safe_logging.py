"""Hayhooks' log lines with user text in them never break the logger.

Hayhooks logs each run as ``Running pipeline '<bold>name</bold>'`` with the request's parameters appended to the
line's format, colour markup on: a query holding ``<script>`` or ``</b>`` was then read as a colour tag, loguru
raised, and the request's log line was lost (a traceback in its place). The markup characters of every value
appended to a line are escaped here, so they print as written.

Usage (once, after Hayhooks is imported)::

    escape_markup_in_hayhooks_logs()
"""

from __future__ import annotations

import re
import sys
from typing import Any

_BEFORE_TAG = re.compile(r"(\\*)<")


class _Escaped(str):
    """A string whose ``repr`` (what Hayhooks' formatter appends) has loguru's markup characters escaped."""

    __slots__ = ()

    def __repr__(self) -> str:
        # n backslashes before "<" become 2n + 1: loguru reads an odd run as an escaped "<" and halves the rest
        return _BEFORE_TAG.sub(lambda match: match.group(1) * 2 + "\\<", str(self))


def escaped_values(extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` with each value replaced by its text, markup escaped (``request_id`` is Hayhooks' own)."""
    return {key: value if key == "request_id" else _Escaped(repr(value)[:2000]) for key, value in extra.items()}


def escape_markup_in_hayhooks_logs() -> None:
    """Replace Hayhooks' stderr sink with one that escapes user text in the appended values (same format, level)."""
    from hayhooks.server import logger as hayhooks_logger

    base_format = hayhooks_logger.formatter

    def safe_format(record: Any) -> str:
        record["extra"] = escaped_values(record["extra"])
        return base_format(record)

    log = hayhooks_logger.log
    log.remove()
    level = getattr(hayhooks_logger, "_log_level", "INFO")  # what Hayhooks read from HAYHOOKS_LOG_LEVEL / LOG
    log.add(sys.stderr, level=level.upper(), format=safe_format)
