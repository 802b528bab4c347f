"""PAYLOAD_INDEXES: every field the version filter of every search reads is indexed with the type of its values,
and an Edge shard carries each index (a boolean through its integer twin), a shard made without one gets it when
opened. The server store's arguments are checked in test_qdrant_store.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qdrant_edge as edge

from document_store.edge_filters import bool_twin
from document_store.edge_store import QdrantEdgeDocumentStore
from document_store.payload_indexes import PAYLOAD_INDEXES
from helpers.statutes.versions import VERSION_FIELDS, version_filter

SCHEMA_OF_VALUE = {bool: "bool", int: "integer", str: "keyword"}
EDGE_TYPE = {"keyword": edge.PayloadSchemaType.Keyword, "integer": edge.PayloadSchemaType.Integer,
             "bool": edge.PayloadSchemaType.Integer}  # Edge matches booleans on their 0/1 twin


def conditions(filters: dict[str, Any]) -> list[dict[str, Any]]:
    if "field" in filters:
        return [filters]
    return [leaf for condition in filters["conditions"] for leaf in conditions(condition)]


def indexed() -> dict[str, str]:
    return {index["field_name"]: index["field_schema"] for index in PAYLOAD_INDEXES}


def test_each_field_is_indexed_once_with_a_type_both_stores_know() -> None:
    names = [index["field_name"] for index in PAYLOAD_INDEXES]
    assert len(names) == len(set(names))
    assert set(indexed().values()) <= set(EDGE_TYPE)
    assert all(name.startswith("meta.") for name in names)


def test_every_version_condition_a_search_sends_is_answered_from_an_index() -> None:
    """Today's filter and an ``as_of`` one: each field has an index whose type is that of the value compared."""
    sent = conditions(version_filter()) + conditions(version_filter("2020-01-01"))
    assert {c["field"] for c in sent} == VERSION_FIELDS
    for condition in sent:
        assert indexed()[condition["field"]] == SCHEMA_OF_VALUE[type(condition["value"])], condition


def test_an_edge_shard_has_each_index_and_regains_a_missing_one_when_opened(tmp_path: Path) -> None:
    expected = {bool_twin(name) if schema == "bool" else name: EDGE_TYPE[schema] for name, schema in indexed().items()}
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=2)
    assert {name: info.data_type for name, info in store.shard.info().payload_schema.items()} == expected
    store.shard.update(edge.UpdateOperation.delete_field_index("meta.status"))  # as a shard made before it existed
    store.close()
    reopened = QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=2)
    assert {name: info.data_type for name, info in reopened.shard.info().payload_schema.items()} == expected
    reopened.close()
