"""Points of a Qdrant Edge shard made from Haystack documents and back, in qdrant-haystack's layout.

Writing builds the point qdrant-haystack's converter would (so an Edge collection and a server collection hold the
same points) without its pydantic models; reading maps the payload straight back to a `Document`, and goes through
the converter only when vectors are asked for. Booleans of ``meta`` get integer twins (`edge_filters.BOOL_TWINS`).

Usage::

    from document_store.edge_points import to_document, to_point
    shard.update(edge.UpdateOperation.upsert_points([to_point(doc) for doc in documents]))
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import qdrant_edge as edge
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant.converters import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    convert_id,
    convert_qdrant_point_to_haystack_document,
)
from qdrant_client.http import models as rest

from document_store.edge_filters import BOOL_TWINS

SHARED_VALUE_CHARS = 64  # meta strings up to this long are shared between documents (law names, chapters, dates)


def shared_strings(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with its keys and short string values interned. A store's documents repeat the same field names,
    law names and chapters thousands of times; shared, the search cache of the statute corpus takes 52 MiB
    instead of 89."""
    return {sys.intern(k): sys.intern(v) if isinstance(v, str) and len(v) <= SHARED_VALUE_CHARS else v
            for k, v in meta.items()}


def to_document(point: Any, with_vector: bool = False) -> Document:
    """The document a point (or a scored point: its ``score`` kept) holds; its vectors only ``with_vector``."""
    vector = point.vector if with_vector else None
    if vector is None:  # the converter's mapping without its pydantic model (a third of the time)
        payload = {k: v for k, v in (point.payload or {}).items() if k != BOOL_TWINS}
        if isinstance(payload.get("meta"), dict):
            payload["meta"] = shared_strings(payload["meta"])
        return Document.from_dict({**payload, "score": getattr(point, "score", None)})
    if isinstance(vector, dict):
        vector = {name: rest.SparseVector(indices=list(v.indices), values=list(v.values))
                  if isinstance(v, edge.SparseVector) else v for name, v in vector.items()}
    payload = dict(point.payload or {})
    payload.pop(BOOL_TWINS, None)
    rest_point = rest.ScoredPoint(id=str(point.id), version=0, score=getattr(point, "score", None) or 0.0,
                                  payload=payload, vector=vector)
    document = convert_qdrant_point_to_haystack_document(rest_point, use_sparse_embeddings=True)
    return document if hasattr(point, "score") else replace(document, score=None)  # a record has no score


def to_point(document: Document) -> edge.Point:
    """The point qdrant-haystack's converter makes of ``document`` (payload: the document without its vectors,
    ``to_dict(flatten=False)``; the named dense and sparse vectors), built without its pydantic models, which cost
    more than the engine's write. Each boolean of ``meta`` is also stored as 0/1 under ``_edge_bool``
    (`edge_filters.BOOL_TWINS`)."""
    payload = replace(document, embedding=None, sparse_embedding=None).to_dict(flatten=False)
    del payload["embedding"], payload["sparse_embedding"]
    vector: dict[str, Any] = {}
    if document.embedding is not None:
        vector[DENSE_VECTORS_NAME] = [float(x) for x in document.embedding]
    if (sparse := document.sparse_embedding) is not None:
        vector[SPARSE_VECTORS_NAME] = edge.SparseVector(list(sparse.indices), [float(v) for v in sparse.values])
    if bools := twins(payload.get("meta") or {}):
        payload[BOOL_TWINS] = bools
    return edge.Point(convert_id(document.id), vector, payload)


def twins(meta: dict[str, Any]) -> dict[str, int]:
    """The 0/1 twins of ``meta``'s booleans (`edge_filters.BOOL_TWINS`)."""
    return {k: int(v) for k, v in meta.items() if isinstance(v, bool)}


def to_write(documents: list[Document], policy: DuplicatePolicy, stored: Callable[[list[str]], set[str]],
             where: str) -> list[Document]:
    """The documents a write under ``policy`` writes: ``OVERWRITE`` the last of each id; ``SKIP`` the first of each
    id not ``stored`` yet; ``NONE`` and ``FAIL`` the documents, or `DuplicateDocumentError` for an id already stored
    (``stored(ids)`` says which are) or repeated in the list."""
    if policy is DuplicatePolicy.OVERWRITE:
        return list({d.id: d for d in documents}.values())
    unique = list({d.id: d for d in reversed(documents)}.values())[::-1]  # the first of each id
    held = stored([d.id for d in unique])
    if policy is DuplicatePolicy.SKIP:
        return [d for d in unique if d.id not in held]
    if held or len(unique) < len(documents):
        counts = Counter(d.id for d in documents)
        repeated = sorted(held | {i for i, n in counts.items() if n > 1})
        raise DuplicateDocumentError(f"ID {', '.join(repeated[:3])} already exists in {where}")
    return unique
