"""Building the QdrantDocumentStore: embedded on disk by default, a Qdrant server when QDRANT_URL is set.

The opener takes plain arguments (no settings object): `pipelines.stores.open_document_store` is the one that
reads them from `Settings`.

Usage::

    from document_store.qdrant_store import StoreLocation, open_qdrant_store
    store = open_qdrant_store(StoreLocation(path=Path("data/qdrant")), "statutes")  # or StoreLocation(url=...)
    print(store.count_documents())
    store.close()   # releases the on-disk lock for other processes

Bad configuration (an unreachable server, a wrong API key, a collection made for other vectors) raises
`StoreConfigError` with a one-line message that says what to do.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from haystack import default_from_dict, default_to_dict, logging
from haystack.utils import Secret
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.document_store import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    QdrantStoreError,
)
from qdrant_client import QdrantClient
from qdrant_client.http import models as rest
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException, UnexpectedResponse

logger = logging.getLogger(__name__)

# Payload indexes for the filters we use (a server and Qdrant Edge use them; local mode scans instead). Every
# search filters by ``meta.in_force`` (`helpers.statute_versions.version_filter`), an ``as_of`` date by the
# validity bounds: without their indexes the engine reads every candidate's payload (Edge: 240 ms a query over
# 24,000 articles instead of 6).
PAYLOAD_INDEXES = [
    {"field_name": f"meta.{name}", "field_schema": "keyword"}
    for name in ("law", "source", "key", "status", "article_no")
] + [{"field_name": "meta.in_force", "field_schema": "bool"}] + [
    {"field_name": f"meta.{name}", "field_schema": "integer"} for name in ("valid_from", "valid_to")]
COLLECTION_NAME_RE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
API_KEY_ENV = "QDRANT_API_KEY"
REINDEX = "delete it and re-index with `python -m pipelines index`"


class StoreLockedError(RuntimeError):
    """Another process holds the embedded store open."""


class StoreConfigError(RuntimeError):
    """The store cannot be used as configured (server unreachable, API key refused, collection made for other
    vectors); the message is one line that says what to do."""


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
    timeout: int = 30  # seconds per request to a server
    shards: int = 1  # for collections a server creates
    replicas: int = 1
    hnsw_m: int = 16  # 0: no HNSW graph (exact search)
    hnsw_ef_construct: int = 100

    def __post_init__(self) -> None:
        if not self.url and self.path is None:
            raise ValueError("a store location needs a Qdrant url or an embedded path")


def server_client_params(location: StoreLocation) -> dict[str, Any]:
    """How this application talks to a Qdrant server: the url, the API key (read from ``QDRANT_API_KEY`` when
    a client is made, never stored) and the request timeout; both the store and `list_collections` use these."""
    assert location.url, "an embedded location has no server"
    return {"url": location.url, "api_key": Secret.from_env_var(API_KEY_ENV, strict=False),
            "timeout": location.timeout}


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
        store = QdrantDocumentStore(
            **server_client_params(location), shard_number=location.shards, replication_factor=location.replicas,
            hnsw_config={"m": location.hnsw_m, "ef_construct": location.hnsw_ef_construct},
            payload_fields_to_index=PAYLOAD_INDEXES, **common)
    else:  # local mode searches by brute force: no HNSW settings (and none in the YAML pipelines)
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
        params = server_client_params(location)
        client = QdrantClient(**{**params, "api_key": params["api_key"].resolve_value()})
        try:
            names = [c.name for c in client.get_collections().collections]
        except ApiException as error:
            raise StoreConfigError(_server_problem(location.url, location.timeout, error) or str(error)) from error
        finally:
            client.close()
        return sorted(n for n in names if not n.endswith("__sources"))
    assert location.path is not None
    if not location.path.is_dir():
        return []
    return sorted(p.name for p in location.path.iterdir()
                  if p.is_dir() and COLLECTION_NAME_RE.fullmatch(p.name) and (p / "collection" / p.name).is_dir())


def _connect(store: QdrantDocumentStore) -> None:
    """Connect now (and create the collection if needed), so that a lock or a bad configuration shows up here."""
    try:
        store.count_documents()
        problem = _collection_problem(store)
    except RuntimeError as error:
        if "already accessed" in str(error):
            raise StoreLockedError(
                f"The store at {store.path} is in use by another process (a running server or "
                "indexing job); stop it, or set QDRANT_URL to share one Qdrant server."
            ) from error
        raise
    except (ValueError, QdrantStoreError, ApiException) as error:
        problem = _server_problem(store.url, store.timeout, error) if store.url else None
        if problem is None:
            try:
                problem = _collection_problem(store)
            except Exception:  # noqa: BLE001 - the original error says more than a failed inspection
                problem = None
        store.close()  # a half-set-up client would skip the collection checks next time
        if problem is None:
            raise
        logger.debug("store configuration error: {error}", error=error)
        raise StoreConfigError(problem) from error
    if problem is not None:
        store.close()
        raise StoreConfigError(problem)


def _server_problem(url: str, timeout: int | None, error: BaseException) -> str | None:
    """The one-line message for a server that cannot be reached or refuses us, from the error or its causes."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, UnexpectedResponse):
            return _http_problem(url, seen)
        if isinstance(seen, ResponseHandlingException):
            source = seen.source
            if isinstance(source, httpx.TimeoutException):
                return (f"The Qdrant server at {url} did not answer within {timeout} s (QDRANT_TIMEOUT); "
                        "check that it is running, or raise QDRANT_TIMEOUT.")
            return (f"Cannot reach the Qdrant server at {url} ({_one_line(source)}); "
                    "start it or unset QDRANT_URL to use the embedded store.")
        seen = seen.__cause__ or seen.__context__
    return None


def _http_problem(url: str, error: UnexpectedResponse) -> str:
    code = error.status_code
    if code in (401, 403):
        if not Secret.from_env_var(API_KEY_ENV, strict=False).resolve_value():
            return f"The Qdrant server at {url} requires an API key (HTTP {code}); set QDRANT_API_KEY."
        return (f"The Qdrant server at {url} rejected QDRANT_API_KEY (HTTP {code}); "
                "set it to the server's API key.")
    try:
        detail = error.structured()["status"]["error"]
    except (ValueError, KeyError, TypeError):
        detail = error.reason_phrase
    return (f"The Qdrant server at {url} answered HTTP {code} ({_one_line(detail)}); "
            "check that QDRANT_URL points at a Qdrant server.")


def _collection_problem(store: QdrantDocumentStore) -> str | None:
    """Why an existing collection cannot serve this application (dense size, distance, the BM25 sparse vector)."""
    assert store._client is not None
    name = store.index
    params = store._client.get_collection(name).config.params
    vectors = params.vectors
    dense = vectors.get(DENSE_VECTORS_NAME) if isinstance(vectors, dict) else vectors
    if dense is None:
        return (f"Collection '{name}' was not made by this application (no '{DENSE_VECTORS_NAME}' vector); "
                f"use another collection name, or {REINDEX}.")
    if dense.size != store.embedding_dim:
        return (f"Collection '{name}' has {dense.size}-d vectors but EMBEDDING_DIM is {store.embedding_dim}; "
                f"set EMBEDDING_DIM (and EMBEDDING_MODEL) to match, or {REINDEX}.")
    if dense.distance != rest.Distance.COSINE:
        return f"Collection '{name}' uses {dense.distance.value} distance, not Cosine; {REINDEX}."
    sparse = (params.sparse_vectors or {}).get(SPARSE_VECTORS_NAME) if isinstance(vectors, dict) else None
    if sparse is None:
        return (f"Collection '{name}' has no '{SPARSE_VECTORS_NAME}' vector (created without sparse embeddings), "
                f"so it cannot hold BM25; {REINDEX}.")
    if sparse.modifier != rest.Modifier.IDF:
        return (f"Collection '{name}' has sparse vectors without the IDF modifier, so BM25 would score wrongly; "
                f"{REINDEX}.")
    return None


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:200]


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
