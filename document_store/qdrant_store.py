"""Building the QdrantDocumentStore: embedded on disk by default, a Qdrant server when QDRANT_URL is set.

The opener takes plain arguments (no settings object): `pipelines.stores.open_document_store` is the one that
reads them from `Settings`.

Usage::

    from document_store.qdrant_store import StoreLocation, open_qdrant_store
    store = open_qdrant_store(StoreLocation(path=Path("data/qdrant")), "statutes")  # or StoreLocation(url=...)
    print(store.count_documents())
    store.close()   # releases the on-disk lock for other processes
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import default_from_dict, default_to_dict
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from qdrant_client import QdrantClient

# Keyword indexes for the filters we use (a server feature; the embedded mode scans instead).
PAYLOAD_INDEXES = [
    {"field_name": f"meta.{name}", "field_schema": "keyword"} for name in ("law", "source", "key", "status")
]
COLLECTION_NAME_RE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


class StoreLockedError(RuntimeError):
    """Another process holds the embedded store open."""


def validate_collection_name(name: str) -> str:
    """Knowledge-base names become Qdrant collection names: letters, digits, ``_`` and ``-`` only."""
    if not isinstance(name, str) or not COLLECTION_NAME_RE.fullmatch(name) or name.endswith("__sources"):
        raise ValueError(
            f"Invalid knowledge base name {name!r}: use 1-64 letters, digits, '_' or '-' (not ending in '__sources')"
        )
    return name


@dataclass(frozen=True)
class StoreLocation:
    """Where knowledge bases live: a Qdrant server (``url``) or a folder holding one embedded store per collection
    (``path``), and the dimension of their dense vectors."""

    url: str | None = None
    path: Path | None = None
    embedding_dim: int = 384

    def __post_init__(self) -> None:
        if not self.url and self.path is None:
            raise ValueError("a store location needs a Qdrant url or an embedded path")


def open_qdrant_store(location: StoreLocation, collection: str, *, connect: bool = True) -> QdrantDocumentStore:
    """Open (and create if needed) the collection; raise `StoreLockedError` when the path is in use.

    ``connect=False`` only builds the object (for serialising pipelines without touching the disk).
    """
    name = validate_collection_name(collection)
    params = {"url": location.url or None, "path": None if location.url else str(local_path(location, name)),
              "location": None, "index": name}
    with _stores_lock:
        existing = _stores.get(_identity(params))
    if existing is not None:  # one instance per path in a process (a second client could not open it)
        if connect:
            _connect(existing)
        return existing
    common = {
        "index": name,
        "embedding_dim": location.embedding_dim,
        "use_sparse_embeddings": True,
        "sparse_idf": True,
        "similarity": "cosine",
        "return_embedding": False,
        "progress_bar": False,
        "write_batch_size": 256,
    }
    if location.url:
        store = QdrantDocumentStore(url=location.url, payload_fields_to_index=PAYLOAD_INDEXES, **common)
    else:
        path = local_path(location, name)
        path.mkdir(parents=True, exist_ok=True)
        store = QdrantDocumentStore(path=str(path), **common)
    if connect:
        _connect(store)
    _register(store)
    return store


def local_path(location: StoreLocation, collection: str) -> Path:
    """Each knowledge base gets its own embedded folder (one client may hold a folder at a time)."""
    assert location.path is not None, "a server location has no local path"
    return location.path / collection


def list_collections(location: StoreLocation) -> list[str]:
    """Knowledge bases that exist: folders under the embedded path, or the server's collections."""
    if location.url:
        client = QdrantClient(url=location.url)
        try:
            names = [c.name for c in client.get_collections().collections]
        finally:
            client.close()
        return sorted(n for n in names if not n.endswith("__sources"))
    assert location.path is not None
    if not location.path.is_dir():
        return []
    return sorted(p.name for p in location.path.iterdir()
                  if p.is_dir() and COLLECTION_NAME_RE.fullmatch(p.name) and (p / "collection" / p.name).is_dir())


def _connect(store: QdrantDocumentStore) -> None:
    try:
        store.count_documents()  # connects and creates the collection now, so a lock shows up here
    except RuntimeError as error:
        if "already accessed" in str(error):
            raise StoreLockedError(
                f"The store at {store.path} is in use by another process (a running server or "
                "indexing job); stop it, or set QDRANT_URL to share one Qdrant server."
            ) from error
        raise


# The open store objects of this process, by path/url and collection. Lifetime: the process. An embedded path can be
# held by one client only, so every opener and every pipeline loaded from YAML must get the same object; a closed
# store reopens through `_connect`.
_stores: dict[tuple, QdrantDocumentStore] = {}
_stores_lock = threading.Lock()


def _identity(params: dict[str, Any]) -> tuple:
    return (params.get("path"), params.get("url"), params.get("location"), params.get("index", "Document"))


def _register(store: QdrantDocumentStore) -> None:
    with _stores_lock:
        _stores[_identity(vars(store))] = store  # the latest open instance is the one to share


def shared_store_from_dict(data: dict[str, Any]) -> QdrantDocumentStore:
    """Deserialise a store, reusing this process's instance for the same path/url and collection.

    An embedded path can be opened by one client only, so the components of a pipeline loaded from YAML
    (each carrying its own copy of the store's dict) must share one instance.
    """
    key = _identity(data.get("init_parameters", {}))
    with _stores_lock:
        if key not in _stores:
            _stores[key] = QdrantDocumentStore.from_dict(data)
        return _stores[key]


def from_dict_sharing_store(cls: type, data: dict[str, Any]) -> Any:
    """``from_dict`` of a component with a ``document_store`` init parameter: the store is this process's open
    instance for the same path/url and collection (see `shared_store_from_dict`), the rest `default_from_dict`."""
    data["init_parameters"]["document_store"] = shared_store_from_dict(data["init_parameters"]["document_store"])
    return default_from_dict(cls, data)


class StoreComponentSerialization:
    """``to_dict``/``from_dict`` for a component whose one init parameter is ``document_store``: the store is
    serialised by its own ``to_dict`` and, when loaded, shared with this process's open instance."""

    document_store: QdrantDocumentStore

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        return from_dict_sharing_store(cls, data)


def qdrant_client_of(store: QdrantDocumentStore) -> QdrantClient:
    """The store's own client: a second client cannot open the same embedded path, so share this one."""
    store.count_documents()  # makes sure the client exists
    client = store._client
    assert client is not None
    return client
