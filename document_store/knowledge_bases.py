"""Knowledge bases where a `StoreLocation` puts them: Qdrant Edge shards in a folder (the embedded default), or the
collections of a Qdrant server (``QDRANT_URL``, qdrant-haystack's `QdrantDocumentStore`).

On disk each knowledge base is a folder ``<path>/<name>/`` holding ``documents/`` (its Edge shard) and
``documents__sources/`` (its source manifest). A knowledge base that qdrant-client's local mode made there
(``<name>/collection/<name>/``, before the Edge store) is copied into Edge the first time it is opened, with its
vectors and manifest (nothing re-embedded), with a progress bar and a one-line notice; the old files are left for
the user to delete.

One object per store in a process: an embedded shard has one owner, so every opener and every component loaded
from YAML shares the instance this module keeps (`shared_store_from_dict`).

Usage::

    from document_store.knowledge_bases import open_store, list_knowledge_bases
    store = open_store(StoreLocation(path=Path("data/qdrant")), "statutes")   # QdrantEdgeDocumentStore
    list_knowledge_bases(StoreLocation(path=Path("data/qdrant")))             # ["statutes", ...]
"""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path
from typing import Any

from haystack import default_from_dict, default_to_dict, logging

from document_store.edge_migration import copy_into_edge
from document_store.edge_store import CONFIG_FILE, DOCUMENTS, QdrantEdgeDocumentStore
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.qdrant_store import (
    COLLECTION_NAME_RE,
    QdrantServerDocumentStore,
    StoreLocation,
    list_collections,
    open_qdrant_store,
    validate_collection_name,
)
from document_store.source_manifest import SourceManifest

logger = logging.getLogger(__name__)

MIGRATED = "migrated_from_local_mode.json"  # written once a local-mode knowledge base is copied into Edge


def knowledge_base_folder(location: StoreLocation, name: str) -> Path:
    """The embedded folder of knowledge base ``name``."""
    assert location.path is not None, "a server location has no folder"
    return location.path / validate_collection_name(name)


def open_store(location: StoreLocation, name: str, *, connect: bool = True,
               progress: bool = True) -> KnowledgeBaseStore:
    """Open (and create if needed) knowledge base ``name``: this process's instance when it has one.

    ``connect=False`` only builds the object (for serialising pipelines without touching the disk or the server).
    Embedded, a second owner gets `StoreLockedError`; a local-mode knowledge base is migrated first.
    """
    name = validate_collection_name(name)
    if location.url:
        key: tuple = ("server", location.url, name)
    else:
        key = ("edge", str(knowledge_base_folder(location, name) / DOCUMENTS), location.embedding_dim)
    with _stores_lock:
        store = _stores.get(key)
    if store is None:
        if location.url:
            store = open_qdrant_store(location, name, connect=False)
        else:
            store = QdrantEdgeDocumentStore(key[1], embedding_dim=location.embedding_dim, hnsw_m=location.hnsw_m,
                                            hnsw_ef_construct=location.hnsw_ef_construct)
        with _stores_lock:
            store = _stores.setdefault(key, store)
    if connect:
        store.open()
        if not location.url:
            migrate_local_mode(knowledge_base_folder(location, name), name, store, progress=progress)
    return store


def migrate_local_mode(folder: Path, name: str, store: QdrantEdgeDocumentStore, progress: bool = True) -> int:
    """Copy a knowledge base made by qdrant-client's local mode in ``folder`` into ``store`` (vectors and
    manifest; nothing re-embedded) unless done before; returns the articles copied (0: nothing to migrate). An
    interrupted copy is redone from the start on the next open (writes overwrite by id)."""
    if not (folder / "collection" / name).is_dir() or (folder / MIGRATED).is_file():
        return 0
    logger.warning("Knowledge base {knowledge_base} was made by qdrant-client's local mode: "
                   "copying it into Qdrant Edge once (vectors kept, nothing re-embedded)", knowledge_base=name)
    with warnings.catch_warnings():  # local mode's "not recommended above 20,000 points": it is being left
        warnings.simplefilter("ignore", UserWarning)
        local = QdrantServerDocumentStore(path=str(folder), index=name, embedding_dim=store.embedding_dim,
                                          use_sparse_embeddings=True, sparse_idf=True, similarity="cosine",
                                          progress_bar=False)
        local.count_documents()  # the client is made (and warns) on first use
    try:
        copied = copy_into_edge(local, store, progress=progress)
        records = SourceManifest(local).all() if local.client.collection_exists(f"{name}__sources") else []
        manifest = SourceManifest(store)
        for record in records:
            manifest._put(record)
    finally:
        local.close()
    (folder / MIGRATED).write_text(json.dumps({"articles": copied, "sources": len(records)}))
    logger.warning("Knowledge base {knowledge_base}: {count} articles and {sources} source records "
                   "copied into Qdrant Edge; the local-mode files ({folder}/collection, meta.json) "
                   "are no longer used and may be deleted",
                   knowledge_base=name, count=copied, sources=len(records), folder=folder)
    return copied


def list_knowledge_bases(location: StoreLocation) -> list[str]:
    """Knowledge bases that exist: the server's collections, or the folders holding an Edge shard (or a local-mode
    collection still to migrate)."""
    if location.url:
        return list_collections(location)
    if location.path is None or not location.path.is_dir():
        return []
    return sorted(p.name for p in location.path.iterdir() if p.is_dir() and COLLECTION_NAME_RE.fullmatch(p.name)
                  and ((p / DOCUMENTS / CONFIG_FILE).is_file() or (p / "collection" / p.name).is_dir()))


def delete_knowledge_base(store: KnowledgeBaseStore) -> None:
    """Delete the knowledge base ``store`` holds: its documents and manifest and, embedded, its folder; the next
    `open_store` of its name makes a new, empty one."""
    store.drop()
    with _stores_lock:
        for key in [key for key, held in _stores.items() if held is store]:
            del _stores[key]


# The open stores of this process, by where they are. Lifetime: the process. An embedded shard has one owner, so
# every opener and every pipeline loaded from YAML must get the same object; a closed store reopens on next use.
_stores: dict[tuple, KnowledgeBaseStore] = {}
_stores_lock = threading.Lock()


def shared_store_from_dict(data: dict[str, Any]) -> KnowledgeBaseStore:
    """Deserialise a store, reusing this process's instance for the same shard (or server and collection).

    The components of a pipeline loaded from YAML each carry their own copy of the store's dict; they must share
    one instance (an embedded shard can have one owner only).
    """
    params = data.get("init_parameters", {})
    edge = data.get("type", "").endswith(QdrantEdgeDocumentStore.__name__)
    key = (("edge", params.get("path"), params.get("embedding_dim", 384)) if edge
           else ("server", params.get("url"), params.get("index", "Document")))
    with _stores_lock:
        if key not in _stores:  # a server store of YAML from before `QdrantServerDocumentStore` is one too
            _stores[key] = (QdrantEdgeDocumentStore.from_dict(data) if edge
                            else QdrantServerDocumentStore.from_dict(data))
        return _stores[key]


def from_dict_sharing_store(cls: type, data: dict[str, Any]) -> Any:
    """``from_dict`` of a component with a ``document_store`` init parameter: the store is this process's open
    instance (see `shared_store_from_dict`), the rest `default_from_dict`."""
    data["init_parameters"]["document_store"] = shared_store_from_dict(data["init_parameters"]["document_store"])
    data["init_parameters"].pop("search_backend", None)  # YAML from before the store alone chose its engine
    return default_from_dict(cls, data)


class StoreComponentSerialization:
    """``to_dict``/``from_dict`` for a component whose one init parameter is ``document_store``: the store is
    serialised by its own ``to_dict`` and, when loaded, shared with this process's open instance."""

    document_store: KnowledgeBaseStore

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        return from_dict_sharing_store(cls, data)
