"""`qdrant_filter`: Haystack filters as qdrant-client's models, with Haystack's meaning of a NOT of several
conditions (NOT (AND …)) at any depth, checked against Haystack's own matching on real points (qdrant-client's
local mode). Its mapping onto Edge's models is in test_edge_filters.py; both stores filtering alike in
test_knowledge_base_store.py."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from haystack import Document
from haystack.utils.filters import FilterError, document_matches_filter
from haystack_integrations.document_stores.qdrant.filters import convert_filters_to_qdrant
from qdrant_client import QdrantClient
from qdrant_client.http import models as rest

from document_store.qdrant_filters import qdrant_filter

PIPL = "中华人民共和国个人信息保护法"
CIVIL = "中华人民共和国民法典"
ROWS = [(PIPL, "第一条", True, 20211101), (PIPL, "第二条", True, 20211101), (PIPL, "第二条", False, 20190101),
        (CIVIL, "第一条", True, 20210101), (CIVIL, "第二条", False, 20100101)]
DOCUMENTS = [Document(id=f"d{i}", content=f"{law}{no}", meta={"law": law, "article_no": no, "in_force": in_force,
                                                               "valid_from": start})
             for i, (law, no, in_force, start) in enumerate(ROWS)]


def eq(field: str, value: Any) -> dict[str, Any]:
    return {"field": f"meta.{field}", "operator": "==", "value": value}


def not_(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"operator": "NOT", "conditions": list(conditions)}


FILTERS = {
    "not of two": not_(eq("law", PIPL), eq("article_no", "第二条")),
    "not of one": not_(eq("law", PIPL)),
    "not of three": not_(eq("law", PIPL), eq("article_no", "第二条"), eq("in_force", True)),
    "not of two inside or": {"operator": "OR", "conditions": [not_(eq("law", PIPL), eq("article_no", "第一条")),
                                                              eq("in_force", False)]},
    "not of two inside and": {"operator": "AND", "conditions": [
        eq("in_force", True), not_(eq("law", CIVIL), {"field": "meta.valid_from", "operator": ">=",
                                                       "value": 20200101})]},
    "not of an or and a not": not_({"operator": "OR", "conditions": [eq("law", CIVIL), eq("in_force", False)]},
                                   not_(eq("article_no", "第一条"), eq("in_force", True))),
}


@pytest.fixture(scope="module")
def client() -> Iterator[QdrantClient]:
    made = QdrantClient(location=":memory:")
    made.create_collection("kb", vectors_config={})
    made.upsert("kb", points=[rest.PointStruct(id=i, vector={}, payload={"id": d.id, "meta": d.meta})
                              for i, d in enumerate(DOCUMENTS)])
    yield made
    made.close()


@pytest.mark.parametrize("name", list(FILTERS))
def test_qdrant_matches_what_haystack_matches(client: QdrantClient, name: str) -> None:
    filters = FILTERS[name]
    expected = sorted(d.id for d in DOCUMENTS if document_matches_filter(filters, d))
    points, _ = client.scroll("kb", scroll_filter=qdrant_filter(filters), limit=100, with_payload=True)
    assert sorted(p.payload["id"] for p in points) == expected
    assert 0 < len(expected) < len(DOCUMENTS)  # each case tells matching from not matching
    # qdrant-haystack's converter alone reads these as "none of them" (when it no longer does, `_not_of_all` can go)
    if name != "not of one":
        raw, _ = client.scroll("kb", scroll_filter=convert_filters_to_qdrant(filters), limit=100, with_payload=True)
        assert sorted(p.payload["id"] for p in raw) != expected


def test_a_not_of_several_becomes_a_not_of_their_and() -> None:
    converted = qdrant_filter(FILTERS["not of two"])
    inner, = converted.must_not
    assert isinstance(inner, rest.Filter) and [c.key for c in inner.must] == ["meta.law", "meta.article_no"]
    single, = qdrant_filter(FILTERS["not of one"]).must_not
    assert isinstance(single, rest.FieldCondition) and single.key == "meta.law"  # nothing to wrap


def test_the_callers_filter_is_left_as_it_was() -> None:
    filters = FILTERS["not of an or and a not"]
    before = copy.deepcopy(filters)
    qdrant_filter(filters)
    assert filters == before


@pytest.mark.parametrize("empty", [None, {}])
def test_no_filter_is_none(empty: dict | None) -> None:
    assert qdrant_filter(empty) is None


@pytest.mark.parametrize("bad", [{"meta.law": PIPL}, {"field": "meta.law", "value": PIPL},
                                 {"conditions": [eq("law", PIPL)]}])
def test_a_filter_without_a_top_level_operator_is_a_clear_error(bad: dict[str, Any]) -> None:
    with pytest.raises(FilterError, match=r"^a filter needs a top-level 'operator' \(see https://docs\.haystack"):
        qdrant_filter(bad)
