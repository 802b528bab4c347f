"""The record of what a knowledge base holds: one entry per source (a law or a file).

Kept in Qdrant itself, beside the documents, so it lives wherever the store lives: a payload-only collection
``<collection>__sources`` on a server (or in qdrant-client's local mode: `document_store.collection_records`), a
payload-only Edge shard in the folder ``<path>__sources`` beside an Edge store's (`document_store.edge_records`). A
source is marked ``indexing`` before its articles are written and ``complete`` after, so an interrupted run is
detected instead of silently answering from half an index.

Usage::

    manifest = SourceManifest(store)
    manifest.mark_indexing({"law:民法典": "<content hash>"})
    ...write documents...
    manifest.mark_complete([completed("law:民法典", "<content hash>", count=1260)])
    manifest.incomplete()   # sources whose indexing never finished
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from document_store.knowledge_base_store import KnowledgeBaseStore

INDEXING = "indexing"
COMPLETE = "complete"


@dataclass(frozen=True)
class SourceRecord:
    """One source in the knowledge base."""

    source: str
    status: str
    content_hash: str
    count: int
    updated_at: float
    embedding: str = ""  # fingerprint of the embedder that made its vectors (see `pipelines.embedders`)
    length: int = 0  # its articles' total length in BM25 terms
    bm25_k1: float = 0.0  # the BM25 parameters its stored weights were computed with (0 = not yet weighted:
    bm25_b: float = 0.0  # an older store that held raw term frequencies)
    bm25_avgdl: float = 0.0
    meta_hash: str = ""  # fingerprint of its articles' metadata (versions, amendment links); "" = older store

    def weighted_with(self, k1: float, b: float) -> bool:
        return self.bm25_avgdl > 0 and (self.bm25_k1, self.bm25_b) == (k1, b)


def completed(source: str, content_hash: str, count: int, embedding: str = "", length: int = 0,
              bm25: tuple[float, float, float] = (0.0, 0.0, 0.0), meta_hash: str = "") -> SourceRecord:
    """The record of a finished source; ``bm25`` = the (k1, b, avgdl) its BM25 weights were computed with."""
    return SourceRecord(source, COMPLETE, content_hash, count, time.time(), embedding, length, *bm25,
                        meta_hash=meta_hash)


class SourceManifest:
    """Reads and writes the per-source records of one knowledge base."""

    def __init__(self, store: KnowledgeBaseStore) -> None:
        self._records = store.source_records()

    def _put(self, *records: SourceRecord) -> None:
        if records:
            self._records.put({record.source: asdict(record) for record in records})

    def get(self, source: str) -> SourceRecord | None:
        payload = self._records.get(source)
        return SourceRecord(**payload) if payload else None

    def all(self) -> list[SourceRecord]:
        return sorted((SourceRecord(**payload) for payload in self._records.all()), key=lambda r: r.source)

    def incomplete(self) -> list[SourceRecord]:
        return [r for r in self.all() if r.status != COMPLETE]

    def mark_indexing(self, hashes: dict[str, str], embedding: str = "",
                      meta_hashes: dict[str, str] | None = None) -> None:
        """Record that the sources ``hashes`` names (source name -> content hash) are being written, with the
        embedder and metadata they are written with (what a resumed run must match to keep them), in one write."""
        now = time.time()
        self._put(*(SourceRecord(source, INDEXING, content_hash, 0, now, embedding=embedding,
                                 meta_hash=(meta_hashes or {}).get(source, ""))
                    for source, content_hash in hashes.items()))

    def mark_complete(self, records: list[SourceRecord]) -> None:
        """Record finished sources (see `completed`), in one write."""
        self._put(*records)

    def relabelled(self, record: SourceRecord, meta_hash: str) -> None:
        """Record that a complete source's metadata was rewritten in place (its vectors kept)."""
        self._put(replace(record, meta_hash=meta_hash, updated_at=time.time()))

    def reweighted(self, record: SourceRecord, length: int, bm25: tuple[float, float, float]) -> None:
        """Record that a complete source's BM25 weights were rewritten."""
        self._put(replace(record, length=length, bm25_k1=bm25[0], bm25_b=bm25[1], bm25_avgdl=bm25[2],
                          updated_at=time.time()))

    def corpus(self, exclude: set[str] | frozenset[str] = frozenset()) -> tuple[int, int]:
        """(articles, total BM25 length) of the complete sources not in ``exclude``: what the average document
        length of BM25 is computed from."""
        records = [r for r in self.all() if r.status == COMPLETE and r.source not in exclude]
        return sum(r.count for r in records), sum(r.length for r in records)

    def stale_weights(self, k1: float, b: float, max_drift: float) -> list[SourceRecord]:
        """Complete sources whose BM25 weights need rewriting: never weighted (an older store of raw term
        frequencies), written with other k1/b, or with an average length more than ``max_drift`` (relative) off
        the collection's current one."""
        records = [r for r in self.all() if r.status == COMPLETE and r.count]
        count = sum(r.count for r in records)
        avgdl = sum(r.length for r in records) / count if count else 0.0
        return [r for r in records if not r.weighted_with(k1, b) or abs(r.bm25_avgdl - avgdl) > max_drift * avgdl]

    def unversioned(self) -> list[SourceRecord]:
        """Complete statute sources indexed before articles carried their versions (no metadata fingerprint):
        searches see them as in force whatever ``as_of`` asks, and amendments are not linked."""
        return [r for r in self.all() if r.status == COMPLETE and r.source.startswith("law:") and not r.meta_hash]

    def other_embeddings(self, embedding: str) -> list[SourceRecord]:
        """Complete sources whose vectors another embedder made (queries against them would be mismatched)."""
        return [r for r in self.all() if r.status == COMPLETE and r.embedding != embedding]

    def remove(self, source: str) -> None:
        self._records.remove(source)

    def drop(self) -> None:
        """Delete every record (when the knowledge base itself is deleted)."""
        self._records.drop()
