"""Statute versions, defined once: which version of an article a search sees, and how a citation of one that is
not in force is marked.

Every article indexed from the statute database carries in its metadata ``in_force`` (its law's status is
现行有效 or 已被修改), ``valid_from`` and ``valid_to`` (dates as integers ``YYYYMMDD``: the day the version took
effect, the day the next one did; `OPEN_END` while in force or when the end is not known) and ``version_date``.
Searches see the law in force unless ``as_of`` asks for the version in force on a day. Documents without these
fields (plain text files, stores indexed before versions) are always seen: the conditions only exclude. The
application turns a request's ``as_of`` into filters once (`with_versions`); a retriever given filters that already
select versions adds nothing, otherwise it adds "in force today".

Usage::

    from helpers.statutes.versions import version_filter, with_versions, version_mark
    version_filter(None)            # in force today: {"field": "meta.in_force", "operator": "!=", "value": False}
    version_filter("2015-06-01")    # the version in force on that day
    with_versions({"field": "meta.law", "operator": "==", "value": "中华人民共和国刑法"}, "2015-06-01")
    version_mark(doc.meta)          # "" in force, else "〔已修改，2024-03-01起不再适用〕" or "〔已失效〕"
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

OPEN_END = 99991231  # valid_to of a version still in force (or whose end the database does not give)
VERSION_FIELDS = frozenset({"meta.in_force", "meta.valid_from", "meta.valid_to"})
_DATE_RE = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$")


def parse_as_of(value: str | date | None) -> int | None:
    """``YYYY-MM-DD`` (or a `date`) as the integer ``YYYYMMDD`` the metadata holds; ``None`` or blank = today's
    law. A malformed or impossible date is a `ValueError` with a one-line reason."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, date):
        return value.year * 10000 + value.month * 100 + value.day
    match = _DATE_RE.match(str(value))
    try:
        if match is None:
            raise ValueError
        day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        raise ValueError(f"as_of must be a date written YYYY-MM-DD (e.g. 2015-06-01), got {value!r}") from None
    return day.year * 10000 + day.month * 100 + day.day


def date_int(text: str | None) -> int:
    """A database date (``YYYY-MM-DD``) as ``YYYYMMDD``; 0 when absent or unreadable."""
    try:
        return parse_as_of(text) or 0
    except ValueError:
        return 0


def date_text(value: int) -> str:
    """``YYYYMMDD`` back to ``YYYY-MM-DD``."""
    return f"{value // 10000:04d}-{value // 100 % 100:02d}-{value % 100:02d}"


def version_filter(as_of: str | date | None = None) -> dict[str, Any]:
    """The Haystack filter that keeps the versions a search may see: in force today (``as_of`` None), or in force
    on ``as_of``. Written with single-condition NOTs, which Qdrant and Haystack's in-memory matching read alike."""
    day = parse_as_of(as_of)
    if day is None:
        return {"field": "meta.in_force", "operator": "!=", "value": False}
    return {"operator": "AND", "conditions": [
        {"operator": "NOT", "conditions": [{"field": "meta.valid_from", "operator": ">", "value": day}]},
        {"operator": "NOT", "conditions": [{"field": "meta.valid_to", "operator": "<=", "value": day}]},
    ]}


def selects_versions(filters: dict[str, Any] | None) -> bool:
    """Whether ``filters`` already say which versions to see (a condition on a version field anywhere in it)."""
    if not filters:
        return False
    if filters.get("field") in VERSION_FIELDS:
        return True
    return any(selects_versions(condition) for condition in filters.get("conditions") or [])


def with_versions(filters: dict[str, Any] | None, as_of: str | date | None = None) -> dict[str, Any]:
    """``filters`` and the version condition together (see `version_filter`). Filters that already select
    versions (e.g. made by this function for ``as_of`` upstream) are kept as they are unless ``as_of`` is given:
    the default "in force today" never narrows an explicit choice."""
    if parse_as_of(as_of) is None and selects_versions(filters):
        return filters  # type: ignore[return-value]
    versions = version_filter(as_of)
    return {"operator": "AND", "conditions": [filters, versions]} if filters else versions


def in_force_on(meta: dict[str, Any], as_of: str | date | None = None) -> bool:
    """Whether the version in ``meta`` is in force on ``as_of`` (today when None); unversioned documents are."""
    day = parse_as_of(as_of)
    if day is None:
        return meta.get("in_force") is not False
    return int(meta.get("valid_from") or 0) <= day < int(meta.get("valid_to") or OPEN_END)


def version_mark(meta: dict[str, Any], as_of: str | date | None = None) -> str:
    """What a citation of this version carries when it is not in force on ``as_of`` (today when None):
    ``〔已修改，YYYY-MM-DD起不再适用〕`` when a later version replaced it that day, ``〔已失效〕`` otherwise;
    ``""`` when in force."""
    if in_force_on(meta, as_of):
        return ""
    valid_to = int(meta.get("valid_to") or OPEN_END)
    day = parse_as_of(as_of)
    if valid_to != OPEN_END and (day is None or valid_to <= day):
        return f"〔已修改，{date_text(valid_to)}起不再适用〕"
    if day is not None and int(meta.get("valid_from") or 0) > day:
        return f"〔{date_text(int(meta['valid_from']))}起施行，{date_text(day)}时尚未生效〕"
    return "〔已失效〕"
