"""qdrant-client's filter models mapped onto Qdrant Edge's (`document_store.edge_filters`), one model at a time:
Haystack filters (through `qdrant_filter`) as must/should/must_not, match values, lists, number and date ranges,
empty/null/id conditions, values counts and geo conditions, booleans matched on their 0/1 twin (`bool_twin`), and a
`FilterError` for what Edge has no twin for. Filtering a real Edge store (booleans included, MatchText refused,
values counts and geo) is in tests/document_store/test_edge_store.py."""

from datetime import date, datetime, timedelta, timezone
from uuid import UUID

import pytest
import qdrant_edge as edge
from haystack.utils.filters import FilterError
from qdrant_client.http import models as rest

from document_store.edge_filters import BOOL_TWINS, bool_twin, edge_filter
from document_store.qdrant_filters import qdrant_filter

PIPL = "中华人民共和国个人信息保护法"
CIVIL = "中华人民共和国民法典"


def converted(filters):
    return edge_filter(qdrant_filter(filters))


def only(conditions):
    assert conditions is not None and len(conditions) == 1
    return conditions[0]


def test_no_filter_is_none():
    assert edge_filter(None) is None
    assert converted(None) is None


def test_an_empty_filter_has_no_parts():
    empty = edge_filter(rest.Filter())
    assert isinstance(empty, edge.Filter)
    assert (empty.must, empty.should, empty.must_not) == (None, None, None)
    assert edge_filter(rest.Filter(must=[], should=[])).must is None  # an empty list is no condition


def test_an_equality_is_a_must_match_value():
    result = converted({"field": "meta.law", "operator": "==", "value": PIPL})
    condition = only(result.must)
    assert isinstance(condition, edge.FieldCondition) and condition.key == "meta.law"
    assert isinstance(condition.match, edge.MatchValue) and condition.match.value == PIPL
    assert condition.range is None and result.should is None and result.must_not is None


def test_in_and_not_in_become_should_and_must_not():
    either = converted({"field": "meta.law", "operator": "in", "value": [PIPL, CIVIL]})
    assert [(c.key, c.match.value) for c in either.should] == [("meta.law", PIPL), ("meta.law", CIVIL)]
    assert either.must is None
    neither = converted({"field": "meta.article_no", "operator": "not in", "value": ["第十三条"]})
    assert only(neither.must_not).match.value == "第十三条"


def test_a_single_condition_not_in_a_list_is_mapped_too():
    result = edge_filter(rest.Filter(must=rest.FieldCondition(key="meta.law", match=rest.MatchValue(value=PIPL))))
    assert only(result.must).match.value == PIPL


def test_match_any_and_match_except_keep_their_values():
    any_of = edge_filter(rest.FieldCondition(key="meta.law", match=rest.MatchAny(any=[PIPL, CIVIL])))
    assert isinstance(any_of.match, edge.MatchAny) and any_of.match.value == [PIPL, CIVIL]
    other = edge_filter(rest.FieldCondition(key="meta.valid_from", match=rest.MatchExcept(**{"except": [1, 2]})))
    assert isinstance(other.match, edge.MatchExcept) and other.match.value == [1, 2]


def test_a_number_range_keeps_its_bounds():
    condition = only(converted({"field": "meta.valid_from", "operator": ">=", "value": 20210101}).must)
    assert isinstance(condition.range, edge.RangeFloat) and condition.match is None
    assert (condition.range.gte, condition.range.gt, condition.range.lte, condition.range.lt) == (
        20210101, None, None, None)
    both = edge_filter(rest.FieldCondition(key="meta.score", range=rest.Range(gt=0.5, lte=1.5)))
    assert (both.range.gte, both.range.gt, both.range.lte, both.range.lt) == (None, 0.5, 1.5, None)


def test_a_date_range_keeps_the_instant_of_each_bound():
    beijing = timezone(timedelta(hours=8))
    condition = edge_filter(rest.FieldCondition(key="meta.version_date", range=rest.DatetimeRange(
        gte=datetime(2021, 11, 1, 8, 0, tzinfo=beijing), lt=date(2022, 1, 1))))
    assert isinstance(condition.range, edge.RangeDateTime)
    assert condition.range.gte == "2021-11-01 00:00:00 UTC"  # 08:00 in Beijing
    assert condition.range.lt == "2022-01-01 00:00:00 UTC"
    assert condition.range.gt is None and condition.range.lte is None
    from_haystack = only(converted({"field": "meta.version_date", "operator": "<", "value": "2021-11-01"}).must)
    assert from_haystack.range.lt == "2021-11-01 00:00:00 UTC"


def test_a_not_of_several_conditions_is_a_nested_must_not():
    result = converted({"operator": "NOT", "conditions": [
        {"field": "meta.law", "operator": "==", "value": PIPL},
        {"field": "meta.article_no", "operator": "==", "value": "第十四条"}]})
    inner = only(result.must_not)
    assert isinstance(inner, edge.Filter)
    assert [(c.key, c.match.value) for c in inner.must] == [("meta.law", PIPL), ("meta.article_no", "第十四条")]


def test_empty_null_and_id_conditions():
    assert edge_filter(rest.IsEmptyCondition(is_empty=rest.PayloadField(key="meta.law"))).key == "meta.law"
    assert edge_filter(rest.IsNullCondition(is_null=rest.PayloadField(key="meta.amended_by"))).key == "meta.amended_by"
    uuid = "5c56c793-69f3-4fbf-87e6-c4bf54c28c26"
    ids = edge_filter(rest.HasIdCondition(has_id=[1, uuid, 1]))
    assert isinstance(ids, edge.HasIdCondition) and ids.point_ids == {1, UUID(uuid)}


@pytest.mark.parametrize(("value", "twin_value"), [(True, 1), (False, 0)])
def test_a_boolean_is_matched_on_its_integer_twin(value, twin_value):
    condition = only(converted({"field": "meta.in_force", "operator": "==", "value": value}).must)
    assert condition.key == f"{BOOL_TWINS}.in_force" == bool_twin("meta.in_force")
    assert condition.match.value == twin_value and not isinstance(condition.match.value, bool)
    unequal = only(converted({"field": "meta.in_force", "operator": "!=", "value": value}).must_not)
    assert unequal.key == f"{BOOL_TWINS}.in_force" and unequal.match.value == twin_value


def test_numbers_are_not_taken_for_booleans():
    condition = only(converted({"field": "meta.valid_from", "operator": "==", "value": 1}).must)
    assert condition.key == "meta.valid_from" and condition.match.value == 1


@pytest.mark.parametrize("key", ["in_force", "content", "meta.extra.in_force"])
def test_only_top_level_meta_booleans_have_a_twin(key):
    with pytest.raises(FilterError, match="booleans of top-level meta fields only"):
        bool_twin(key)


def test_a_boolean_condition_on_a_nested_field_is_a_filter_error():
    with pytest.raises(FilterError, match="'meta.extra.in_force'"):
        converted({"field": "meta.extra.in_force", "operator": "==", "value": True})


@pytest.mark.parametrize(("condition", "named"), [
    (rest.NestedCondition(nested=rest.Nested(key="meta.items", filter=rest.Filter())), "NestedCondition"),
    (rest.FieldCondition(key="meta.law", match=rest.MatchPhrase(phrase="个人信息")), "MatchPhrase"),
])
def test_what_edge_has_no_twin_for_is_a_filter_error_naming_it(condition, named):
    with pytest.raises(FilterError, match=named):
        edge_filter(condition)
    with pytest.raises(FilterError, match=named):  # inside a filter as well
        edge_filter(rest.Filter(must_not=[condition]))


@pytest.mark.parametrize(("condition", "named"), [({"must": []}, "dict"), ("meta.law == 民法典", "str")])
def test_what_is_no_filter_model_is_a_filter_error(condition, named):
    with pytest.raises(FilterError, match=f"cannot filter by {named}"):
        edge_filter(condition)


def test_min_should_is_a_filter_error():
    one = rest.FieldCondition(key="meta.law", match=rest.MatchValue(value=PIPL))
    with pytest.raises(FilterError, match="min_should"):
        edge_filter(rest.Filter(min_should=rest.MinShould(conditions=[one], min_count=1)))
    with pytest.raises(FilterError, match="min_should"):  # nested inside another filter too
        edge_filter(rest.Filter(must=[rest.Filter(min_should=rest.MinShould(conditions=[one], min_count=1))]))


def test_a_values_count_condition_is_kept_or_refused():
    condition = rest.FieldCondition(key="meta.amended_by", values_count=rest.ValuesCount(gte=2))
    try:
        result = edge_filter(condition)
    except FilterError:
        return  # refused clearly: what the docstring promises
    assert result.values_count is not None
    assert (result.values_count.gte, result.values_count.gt, result.values_count.lte, result.values_count.lt) == (
        2, None, None, None)
    assert result.key == "meta.amended_by" and result.match is None and result.range is None


def test_geo_conditions_keep_their_points():
    beijing, shanghai = rest.GeoPoint(lon=116.4, lat=39.9), rest.GeoPoint(lon=121.5, lat=31.2)
    near = edge_filter(rest.FieldCondition(key="meta.place", geo_radius=rest.GeoRadius(center=beijing, radius=500.0)))
    assert (near.geo_radius.center.lon, near.geo_radius.center.lat, near.geo_radius.radius) == (116.4, 39.9, 500.0)
    box = edge_filter(rest.FieldCondition(key="meta.place", geo_bounding_box=rest.GeoBoundingBox(
        top_left=beijing, bottom_right=shanghai))).geo_bounding_box
    assert (box.top_left.lon, box.bottom_right.lat) == (116.4, 31.2)
    ring = rest.GeoLineString(points=[beijing, shanghai, rest.GeoPoint(lon=113.3, lat=23.1), beijing])
    polygon = edge_filter(rest.FieldCondition(key="meta.place", geo_polygon=rest.GeoPolygon(
        exterior=ring, interiors=[ring]))).geo_polygon
    assert [p.lon for p in polygon.exterior] == [116.4, 121.5, 113.3, 116.4]
    assert [[p.lat for p in hole] for hole in polygon.interiors] == [[39.9, 31.2, 23.1, 39.9]]


def test_empty_and_null_flags_of_a_field_condition_are_kept():
    assert edge_filter(rest.FieldCondition(key="meta.law", is_empty=True)).is_empty is True
    assert edge_filter(rest.FieldCondition(key="meta.law", is_null=False)).is_null is False


def test_a_boolean_match_with_another_condition_on_the_field_is_a_filter_error():
    with pytest.raises(FilterError, match="boolean alone.*'meta.in_force'"):
        edge_filter(rest.FieldCondition(key="meta.in_force", match=rest.MatchValue(value=True),
                                        values_count=rest.ValuesCount(gte=1)))
