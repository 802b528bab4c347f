"""Opening a Qdrant server store as configured, and bad configuration as a one-line `StoreConfigError`.

No Qdrant server can run here: the server wiring is checked on the store object and on what a client sends to a
local HTTP listener that only answers with an error; the collection checks run on real local-mode collections.
"""

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi import HTTPException
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from qdrant_client import QdrantClient, models

from config.settings import Settings
from document_store.errors import StoreConfigError
from document_store.knowledge_bases import open_store
from document_store.qdrant_store import (
    QdrantServerDocumentStore,
    StoreLocation,
    connect_qdrant_store,
    list_collections,
    open_qdrant_store,
)
from interfaces.chat_api import http_errors
from interfaces.cli import main
from pipelines.stores import open_document_store, store_location

UNAUTHORIZED = {"status": {"error": "Must provide an API key or an Authorization bearer token"}, "time": 0}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Unauthorized(BaseHTTPRequestHandler):
    """Answers every request as a Qdrant server with a different API key does: HTTP 401 and its JSON body."""

    seen_keys: list[str | None]

    def _answer(self) -> None:
        self.seen_keys.append(self.headers.get("api-key"))
        body = json.dumps(UNAUTHORIZED).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def unauthorized_server() -> Iterator[tuple[str, list[str | None]]]:
    """(url, the api-key headers it received)."""
    seen: list[str | None] = []
    handler = type("Handler", (Unauthorized,), {"seen_keys": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def assert_one_line(error: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(error.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


def test_server_store_carries_key_timeout_shards_and_hnsw():
    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings(qdrant_url=url, qdrant_timeout=7, qdrant_shards=3, qdrant_replicas=2, qdrant_hnsw_m=0,
                        qdrant_hnsw_ef_construct=50)
    store = open_document_store(settings, "wiring", connect=False)
    params = store.to_dict()["init_parameters"]
    assert params["url"] == url and params["path"] is None
    assert params["api_key"] == {"type": "env_var", "env_vars": ["QDRANT_API_KEY"], "strict": False}
    assert params["timeout"] == 7
    assert params["shard_number"] == 3 and params["replication_factor"] == 2
    assert params["hnsw_config"] == {"m": 0, "ef_construct": 50}
    indexed = {index["field_name"]: index["field_schema"] for index in params["payload_fields_to_index"]}
    assert indexed["meta.article_no"] == "keyword" and indexed["meta.law"] == "keyword"
    assert indexed["meta.in_force"] == "bool" and indexed["meta.valid_to"] == "integer"  # every search's version filter
    assert QdrantServerDocumentStore.from_dict(store.to_dict()).api_key == store.api_key  # the key is never serialised


def test_store_location_takes_the_server_settings_from_settings():
    settings = Settings(qdrant_url="http://qdrant:6333", qdrant_timeout=5, qdrant_shards=4, qdrant_replicas=3,
                        qdrant_hnsw_m=32, qdrant_hnsw_ef_construct=200, embedding_dim=768)
    assert store_location(settings) == StoreLocation(url="http://qdrant:6333", embedding_dim=768, timeout=5,
                                                     shards=4, replicas=3, hnsw_m=32, hnsw_ef_construct=200)


def test_the_store_and_list_collections_send_the_api_key(unauthorized_server, monkeypatch):
    url, seen = unauthorized_server
    monkeypatch.setenv("QDRANT_API_KEY", "wrong-key")
    location = StoreLocation(url=url, timeout=2)
    with pytest.raises(StoreConfigError) as error:
        open_qdrant_store(location, "keyed")
    assert_one_line(error, url, "rejected QDRANT_API_KEY (HTTP 401)")
    seen.clear()
    with pytest.raises(StoreConfigError) as error:
        list_collections(location)
    assert_one_line(error, url, "rejected QDRANT_API_KEY (HTTP 401)")
    assert seen and set(seen) == {"wrong-key"}


def test_a_server_that_needs_a_key_says_to_set_it(unauthorized_server, monkeypatch):
    url, _ = unauthorized_server
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    with pytest.raises(StoreConfigError) as error:
        list_collections(StoreLocation(url=url, timeout=2))
    assert_one_line(error, url, "requires an API key (HTTP 401); set QDRANT_API_KEY")


@pytest.mark.parametrize("opener", [lambda loc: open_qdrant_store(loc, "nowhere"), list_collections])
def test_unreachable_server_is_a_quick_one_line_error(opener):
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(StoreConfigError) as error:
        opener(StoreLocation(url=url, timeout=2))
    assert time.monotonic() - started < 5
    assert_one_line(error, f"Cannot reach the Qdrant server at {url}", "start it or unset QDRANT_URL")


@pytest.mark.parametrize("opener", [lambda loc: open_qdrant_store(loc, "silent"), list_collections])
def test_the_timeout_bounds_a_server_that_does_not_answer(silent_server, opener):
    started = time.monotonic()
    with pytest.raises(StoreConfigError) as error:
        opener(StoreLocation(url=silent_server, timeout=1))
    assert time.monotonic() - started < 4
    assert_one_line(error, silent_server, "did not answer within 1 s", "QDRANT_TIMEOUT")


def make_collection(folder, name: str, dense: models.VectorParams | dict, sparse: dict | None) -> None:
    """A local-mode collection made directly with qdrant-client, as another tool (or an old version) would."""
    client = QdrantClient(path=str(folder / name))
    client.create_collection(name, vectors_config=dense, sparse_vectors_config=sparse)
    client.close()


COSINE_384 = models.VectorParams(size=384, distance=models.Distance.COSINE)


def server_store(folder, name: str) -> QdrantDocumentStore:
    """The store a server collection gets (qdrant-client's local mode standing in for the server)."""
    return QdrantDocumentStore(path=str(folder / name), index=name, embedding_dim=384, use_sparse_embeddings=True,
                               sparse_idf=True, similarity="cosine", progress_bar=False)


@pytest.mark.parametrize(
    ("dense", "sparse", "message"),
    [({"text-dense": models.VectorParams(size=8, distance=models.Distance.COSINE)},
      {"text-sparse": models.SparseVectorParams(modifier=models.Modifier.IDF)},
      "has 8-d vectors but EMBEDDING_DIM is 384"),
     (COSINE_384, None, "cannot hold BM25"),  # unnamed dense vector: qdrant-haystack's own check
     ({"text-dense": COSINE_384}, None, "cannot hold BM25"),  # named but no sparse: qdrant-haystack accepts it
     ({"text-dense": COSINE_384}, {"text-sparse": models.SparseVectorParams()}, "without the IDF modifier"),
     ({"text-dense": models.VectorParams(size=384, distance=models.Distance.DOT)},
      {"text-sparse": models.SparseVectorParams(modifier=models.Modifier.IDF)}, "not Cosine"),
     ({"other": COSINE_384}, None, "not made by this application")],
)
def test_incompatible_collection_is_a_one_line_error(tmp_path, dense, sparse, message):
    make_collection(tmp_path, "kb", dense, sparse)
    with pytest.raises(StoreConfigError) as error:
        connect_qdrant_store(server_store(tmp_path, "kb"))
    assert_one_line(error, "Collection 'kb'", message, "re-index")
    client = QdrantClient(path=str(tmp_path / "kb"))  # the failed open released the folder
    client.close()


def test_a_collection_made_by_the_store_itself_opens(tmp_path):
    made = server_store(tmp_path, "ours")
    connect_qdrant_store(made)
    made.close()
    store = server_store(tmp_path, "ours")
    connect_qdrant_store(store)
    assert store.count_documents() == 0
    store.close()


def test_an_edge_store_made_for_other_vectors_is_a_one_line_error(tmp_path):
    open_store(StoreLocation(path=tmp_path, embedding_dim=8), "kb").close()
    with pytest.raises(StoreConfigError) as error:
        open_store(StoreLocation(path=tmp_path, embedding_dim=384), "kb")
    assert_one_line(error, "8-dimensional vectors, not 384", "re-index")


def test_cli_prints_one_line_for_an_unreachable_server(settings, capsys, monkeypatch):
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("QDRANT_URL", url)
    monkeypatch.setenv("QDRANT_TIMEOUT", "2")
    code = main(["stats"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: Cannot reach the Qdrant server at {url}") and err.count("\n") == 1, err


def test_chat_api_answers_503_with_the_message():
    with pytest.raises(HTTPException) as error, http_errors():
        raise StoreConfigError("Collection 'kb' has 8-d vectors but EMBEDDING_DIM is 384; re-index.")
    assert error.value.status_code == 503 and "8-d vectors" in error.value.detail
