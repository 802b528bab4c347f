"""The filters a request may carry, checked before any retriever sees them: the one place for that contract.

A Haystack filter is a comparison ``{"field", "operator", "value"}`` or a logical node ``{"operator": "AND" | "OR"
| "NOT", "conditions": [...]}``. Every retrieval path (Qdrant, BM25, citation lookup) reads the same filters, and
each failed differently on what it did not expect (a 200-level nest overflowed the stack, an object as a value
broke BM25): here a bad filter is one `ValueError` (an HTTP 400) that names where it is wrong.

Usage::

    from application.filters import check_filters
    check_filters({"field": "meta.law", "operator": "==", "value": "中华人民共和国个人信息保护法"})  # returns it
    check_filters({"operator": "AND", "conditions": []})  # ValueError: filters: AND needs a non-empty list ...
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from haystack.utils.filters import COMPARISON_OPERATORS, LOGICAL_OPERATORS

from helpers.checks.user_text import lone_surrogate_at, shown

MAX_DEPTH = 8
MAX_NODES = 200
MAX_TEXT_CHARS = 1000
MAX_LIST_ITEMS = 500
ORDER_OPERATORS = (">", ">=", "<", "<=")
LIST_OPERATORS = ("in", "not in")
# a dotted path of ASCII names (meta.law): what every store reads as a payload key
FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,3}")


def check_filters(filters: Any) -> dict[str, Any] | None:
    """``filters`` when it is a valid Haystack filter (``None`` and ``{}`` mean none); a one-line `ValueError`
    otherwise: at most `MAX_DEPTH` levels and `MAX_NODES` conditions, known operators, and values of the type the
    operator compares (a scalar; a list for ``in``; a number or an ISO date for ``>`` …)."""
    if filters is None or filters == {}:
        return None
    nodes = [0]
    _check_node(filters, "filters", 1, nodes)
    return filters


def _check_node(node: Any, where: str, depth: int, nodes: list[int]) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: filters nest at most {MAX_DEPTH} levels deep")
    nodes[0] += 1
    if nodes[0] > MAX_NODES:
        raise ValueError(f"filters hold at most {MAX_NODES} conditions")
    if not isinstance(node, dict):
        raise ValueError(  # noqa: TRY004 - a client error: HTTP 400
            f"{where} must be an object: {{field, operator, value}} or {{operator, conditions}}")
    operator = node.get("operator")
    if isinstance(operator, str) and operator in LOGICAL_OPERATORS:
        _check_logical(node, where, depth, nodes)
    elif isinstance(operator, str) and operator in COMPARISON_OPERATORS:
        _check_comparison(node, where)
    else:
        known = [*LOGICAL_OPERATORS, *COMPARISON_OPERATORS]
        raise ValueError(f"{where}.operator must be one of {', '.join(known)}, got {shown(operator)}")


def _check_logical(node: dict[str, Any], where: str, depth: int, nodes: list[int]) -> None:
    operator, conditions = node["operator"], node.get("conditions")
    if set(node) != {"operator", "conditions"}:
        raise ValueError(f"{where}: a {operator} filter has exactly the keys operator and conditions")
    if not isinstance(conditions, list) or not conditions:
        raise ValueError(f"{where}: {operator} needs a non-empty list of conditions")
    for i, condition in enumerate(conditions):
        _check_node(condition, f"{where}.conditions[{i}]", depth + 1, nodes)


def _check_comparison(node: dict[str, Any], where: str) -> None:
    operator, field, value = node["operator"], node.get("field"), node.get("value")
    if set(node) != {"field", "operator", "value"}:
        raise ValueError(f"{where}: a {operator} filter has exactly the keys field, operator and value")
    if not isinstance(field, str) or not FIELD_RE.fullmatch(field):
        raise ValueError(f"{where}.field must be a field name such as meta.law, got {shown(field)}")
    if operator in LIST_OPERATORS:
        if not isinstance(value, list) or len(value) > MAX_LIST_ITEMS or not all(map(_is_scalar, value)):
            raise ValueError(f"{where}.value of {operator!r} must be a list of at most {MAX_LIST_ITEMS} strings or "
                             f"numbers, got {shown(value)}")
    elif operator in ORDER_OPERATORS:
        if not (_is_number(value) or (isinstance(value, str) and _is_date(value))):
            raise ValueError(f"{where}.value of {operator!r} must be a number or an ISO date, got {shown(value)}")
    elif not _is_scalar(value):
        raise ValueError(f"{where}.value of {operator!r} must be a string, a number or true/false, "
                         f"got {shown(value)}")


def _is_text(value: str) -> bool:
    """Text that every store can encode: not too long, no lone surrogate."""
    return len(value) <= MAX_TEXT_CHARS and lone_surrogate_at(value) is None


def _is_number(value: Any) -> bool:
    """A number every store compares: a 64-bit integer or a finite float."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, bool) or _is_number(value) or (isinstance(value, str) and _is_text(value))


def _is_date(value: str) -> bool:
    if not _is_text(value):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True
