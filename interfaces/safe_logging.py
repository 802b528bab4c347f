"""Hayhooks' log lines with user text in them never break the logger.

Hayhooks logs each run as ``Running pipeline '<bold>name</bold>'`` with the request's parameters appended to the
line's format, colour markup on: a query holding ``<script>`` or ``</b>`` was then read as a colour tag, loguru
raised, and the request's log line was lost (a traceback in its place). The markup characters of every value
appended to a line are escaped here, so they print as written. Hayhooks' format also dropped the traceback of
every logged exception (a callable loguru format must ask for ``{exception}``): it is printed here; and the colour
codes uvicorn puts in its own lines are taken out (they filled log files with escape sequences).

Usage (once, after Hayhooks is imported)::

    escape_markup_in_hayhooks_logs()
"""

from __future__ import annotations

import re
import sys
from typing import Any

from hayhooks.server.logger import formatter as hayhooks_format  # importing it replaces loguru's sinks

_BEFORE_TAG = re.compile(r"(\\*)<")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Escaped(str):
    """A string whose ``repr`` (what Hayhooks' formatter appends) has loguru's markup characters escaped."""

    __slots__ = ()

    def __repr__(self) -> str:
        # n backslashes before "<" become 2n + 1: loguru reads an odd run as an escaped "<" and halves the rest
        return _BEFORE_TAG.sub(lambda match: match.group(1) * 2 + "\\<", str(self))


def escaped_values(extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` with each value replaced by its text, markup escaped (``request_id`` is Hayhooks' own)."""
    return {key: value if key == "request_id" else _Escaped(repr(value)[:2000]) for key, value in extra.items()}


def safe_format(record: Any) -> str:
    """Hayhooks' line format with user text escaped (`escaped_values`) and the traceback of a logged exception."""
    # the record is shared by every sink: Hayhooks' format reads a copy with the values escaped, so a second sink
    # with this format escapes the original values, not the first one's escaped ones
    escaped = {**record, "extra": escaped_values(record["extra"])}
    record["message"] = _ANSI.sub("", record["message"])  # uvicorn's colour_message: codes in a log file otherwise
    # a callable format gets no traceback unless it asks for one: Hayhooks' dropped every logged exception's
    return hayhooks_format(escaped) + ("{exception}" if record["exception"] else "")


def escape_markup_in_hayhooks_logs() -> None:
    """Replace Hayhooks' stderr sink with one that formats with `safe_format` (same level)."""
    from hayhooks.server import logger as hayhooks_logger

    log = hayhooks_logger.log
    log.remove()
    level = getattr(hayhooks_logger, "_log_level", "INFO")  # what Hayhooks read from HAYHOOKS_LOG_LEVEL / LOG
    # no variable values in tracebacks (``diagnose``): they could show a request's key or a user's text
    log.add(sys.stderr, level=level.upper(), format=safe_format, backtrace=False, diagnose=False)
