"""Haystack filters for Qdrant Edge: qdrant-client's filter models (`qdrant_filters.qdrant_filter`, what the server
store sends too) mapped one to one onto `qdrant_edge`'s. A condition Edge has no twin for is a `FilterError`.

Usage::

    from document_store.edge_filters import edge_filter
    from document_store.qdrant_filters import qdrant_filter
    condition = edge_filter(qdrant_filter({"field": "meta.law", "operator": "==", "value": "民法典"}))
"""

from __future__ import annotations

from typing import Any

import qdrant_edge as edge
from haystack.utils.filters import FilterError
from qdrant_client.http import models as rest

# qdrant-edge-py 0.9.0 turns a Python bool in MatchValue into an integer, so no condition ever matches a boolean
# payload value (`in_force != False` would keep superseded versions). Each boolean of ``meta`` is therefore also
# stored as 0/1 under this payload key, conditions on it are matched there, and it is dropped when read back.
# tests/document_store/test_edge_store.py has a canary that fails once the binding matches booleans itself.
BOOL_TWINS = "_edge_bool"


def bool_twin(key: str) -> str:
    if not key.startswith("meta.") or "." in key[len("meta."):]:
        raise FilterError(f"the Edge store can match booleans of top-level meta fields only, not {key!r}")
    return f"{BOOL_TWINS}.{key[len('meta.'):]}"


def edge_filter(condition: Any) -> Any:
    """qdrant-client's filter models (what `convert_filters_to_qdrant` builds) as Edge's, one to one."""
    if condition is None:
        return None
    if isinstance(condition, rest.Filter):
        if condition.min_should is not None:
            raise FilterError("min_should filters are not supported by the Edge store")
        parts = {name: [edge_filter(c) for c in _as_list(getattr(condition, name))] or None
                 for name in ("must", "should", "must_not")}
        return edge.Filter(**parts)
    if isinstance(condition, rest.FieldCondition):
        return _field_condition(condition)
    if isinstance(condition, rest.IsEmptyCondition):
        return edge.IsEmptyCondition(condition.is_empty.key)
    if isinstance(condition, rest.IsNullCondition):
        return edge.IsNullCondition(condition.is_null.key)
    if isinstance(condition, rest.HasIdCondition):
        return edge.HasIdCondition(set(condition.has_id))
    raise FilterError(f"the Edge store cannot filter by {type(condition).__name__}")


def _field_condition(condition: rest.FieldCondition) -> Any:
    """Every part of a FieldCondition (match, range, values count, geo, empty, null); a boolean match alone."""
    parts = {"range": _range(condition.range), "values_count": _values_count(condition.values_count),
             "geo_bounding_box": _geo_box(condition.geo_bounding_box), "geo_radius": _geo_radius(condition.geo_radius),
             "geo_polygon": _geo_polygon(condition.geo_polygon), "is_empty": condition.is_empty,
             "is_null": condition.is_null}
    if isinstance(condition.match, rest.MatchValue) and isinstance(condition.match.value, bool):
        if any(value is not None for value in parts.values()):
            raise FilterError(f"the Edge store matches a boolean alone, not with other conditions on {condition.key!r}")
        return edge.FieldCondition(bool_twin(condition.key), match=edge.MatchValue(int(condition.match.value)))
    return edge.FieldCondition(condition.key, match=_match(condition.match), **parts)


def _as_list(value: Any) -> list:
    return [] if value is None else value if isinstance(value, list) else [value]


def _match(match: Any) -> Any:
    if match is None:
        return None
    if isinstance(match, rest.MatchValue):
        return edge.MatchValue(match.value)
    if isinstance(match, rest.MatchAny):
        return edge.MatchAny(list(match.any))
    if isinstance(match, rest.MatchExcept):
        return edge.MatchExcept(list(match.except_))
    raise FilterError(f"the Edge store cannot match by {type(match).__name__}")


def _range(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, rest.DatetimeRange):
        return edge.RangeDateTime(**{k: None if v is None else v.isoformat()
                                     for k, v in (("gte", value.gte), ("gt", value.gt), ("lte", value.lte),
                                                  ("lt", value.lt))})
    if isinstance(value, rest.Range):
        return edge.RangeFloat(gte=value.gte, gt=value.gt, lte=value.lte, lt=value.lt)
    raise FilterError(f"the Edge store cannot filter by the range {type(value).__name__}")


def _values_count(value: rest.ValuesCount | None) -> Any:
    return None if value is None else edge.ValuesCount(lt=value.lt, gt=value.gt, lte=value.lte, gte=value.gte)


def _point(point: rest.GeoPoint) -> Any:
    return edge.GeoPoint(lon=point.lon, lat=point.lat)


def _ring(ring: rest.GeoLineString) -> list:
    return [_point(point) for point in ring.points]


def _geo_box(box: rest.GeoBoundingBox | None) -> Any:
    return None if box is None else edge.GeoBoundingBox(_point(box.top_left), _point(box.bottom_right))


def _geo_radius(circle: rest.GeoRadius | None) -> Any:
    return None if circle is None else edge.GeoRadius(_point(circle.center), circle.radius)


def _geo_polygon(polygon: rest.GeoPolygon | None) -> Any:
    if polygon is None:
        return None
    interiors = None if polygon.interiors is None else [_ring(ring) for ring in polygon.interiors]
    return edge.GeoPolygon(_ring(polygon.exterior), interiors)
