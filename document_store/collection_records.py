"""A source manifest's records in a Qdrant collection (``<collection>__sources``, payload-only points) of a server
or of qdrant-client's local mode: the `Records` of `QdrantServerDocumentStore`.

Usage::

    records = CollectionRecords(client, "statutes__sources")
    records.put({"law:民法典": {...}}); records.get("law:民法典")
"""

from __future__ import annotations

import uuid
from typing import Any

from qdrant_client import QdrantClient, models

_NAMESPACE = uuid.UUID("6f1b0a9c-4a55-4c1e-9f55-1d2b3c4d5e6f")


def _point_id(source: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, source))


class CollectionRecords:
    """Records as payload-only points of a collection (``<collection>__sources``) of a server or local mode."""

    def __init__(self, client: QdrantClient, collection: str) -> None:
        self._client = client
        self.collection = collection
        if not client.collection_exists(collection):
            client.create_collection(collection, vectors_config={})

    def put(self, payloads: dict[str, dict[str, Any]]) -> None:
        self._client.upsert(self.collection, wait=True, points=[
            models.PointStruct(id=_point_id(source), vector={}, payload=payload)
            for source, payload in payloads.items()])

    def get(self, source: str) -> dict[str, Any] | None:
        points = self._client.retrieve(self.collection, [_point_id(source)], with_payload=True)
        return points[0].payload if points and points[0].payload else None

    def all(self) -> list[dict[str, Any]]:
        payloads, offset = [], None
        while True:
            points, offset = self._client.scroll(self.collection, limit=1000, offset=offset, with_payload=True)
            payloads.extend(p.payload for p in points if p.payload)
            if offset is None:
                return payloads

    def remove(self, source: str) -> None:
        self._client.delete(self.collection, points_selector=models.PointIdsList(points=[_point_id(source)]))

    def drop(self) -> None:
        self._client.delete_collection(self.collection)
