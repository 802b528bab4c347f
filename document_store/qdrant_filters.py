"""Haystack filters as qdrant-client's filter models, as both stores send them to Qdrant's engine: by
qdrant-haystack's `convert_filters_to_qdrant`, after making a ``NOT`` of several conditions ``NOT (AND …)`` as
Haystack defines it (the converter alone gives "none of them"), and with a clear `FilterError` for a filter without
a top-level operator.

Usage::

    from document_store.qdrant_filters import qdrant_filter
    qdrant_filter({"field": "meta.law", "operator": "==", "value": "民法典"})   # rest.Filter(must=[...])
"""

from __future__ import annotations

from typing import Any

from haystack.utils.filters import FilterError
from haystack_integrations.document_stores.qdrant.filters import convert_filters_to_qdrant
from qdrant_client.http import models as rest


def qdrant_filter(filters: dict[str, Any] | None) -> rest.Filter | None:
    """``filters`` (Haystack's) as qdrant-client's models; None without filters."""
    if filters and "operator" not in filters:
        raise FilterError("a filter needs a top-level 'operator' (see "
                          "https://docs.haystack.deepset.ai/docs/metadata-filtering)")
    return convert_filters_to_qdrant(_not_of_all(filters) if filters else None)


def _not_of_all(item: dict[str, Any]) -> dict[str, Any]:
    conditions = item.get("conditions")
    if not isinstance(conditions, list):
        return item
    conditions = [_not_of_all(c) for c in conditions]
    if item["operator"] == "NOT" and len(conditions) > 1:
        conditions = [{"operator": "AND", "conditions": conditions}]
    return {**item, "conditions": conditions}
