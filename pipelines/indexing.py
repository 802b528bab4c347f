"""The indexing pipeline: sources → articles → BM25 terms + dense embeddings → Qdrant.

`build_indexing_pipeline` is the Haystack `Pipeline` (also in ``yaml_pipelines/indexing.yaml``);
`Indexer` runs it source by source with a progress bar, idempotently (stable ids, overwrite), replacing a
source whose content changed and recording each source in the `SourceManifest`, so that an interrupted
run is detected and finished by the next one.

Usage::

    from pipelines.indexing import Indexer, law_sources
    from config.settings import Settings
    from pipelines.stores import open_document_store

    settings = Settings.from_env()
    store = open_document_store(settings)
    report = Indexer(store, settings).index(law_sources(["个人信息保护法"]))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from haystack import Document, Pipeline, logging
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from tqdm import tqdm

from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
from components.preprocessors.statute_splitter import StatuteSplitter
from components.writers.qdrant_point_writer import QdrantPointWriter
from config.settings import Settings
from document_store.qdrant_store import qdrant_client_of
from document_store.source_manifest import COMPLETE, SourceManifest
from document_store.statute_db import StatuteDB, content_hash
from document_store.text_files import load_text_file
from pipelines.embedders import document_embedder, embedding_fingerprint

logger = logging.getLogger(__name__)

GROUP_SIZE = 4096  # documents per pipeline run: small sources are grouped so the encoder batches by length


@dataclass(frozen=True)
class Source:
    """A named unit of indexing (one law or one file); re-indexing a name replaces its articles."""

    name: str
    documents: list[Document]

    @property
    def content_hash(self) -> str:
        return content_hash(self.documents)


@dataclass(frozen=True)
class SourceResult:
    source: str
    action: str  # added | replaced | re-embedded | unchanged | resumed
    count: int


def law_sources(names: list[str], db: StatuteDB | None = None) -> list[Source]:
    """Sources for laws from the statute database (``["all"]`` = every current law)."""
    db = db or StatuteDB()
    return [Source(f"law:{name}", db.articles(name)) for name in dict.fromkeys(db.resolve(names))]


def file_sources(paths: Iterable[str]) -> list[Source]:
    """Sources for .txt/.md files (raises `FileLoadError` with a one-line reason for a bad file)."""
    sources = []
    for path in paths:
        doc = load_text_file(path)
        sources.append(Source(doc.meta["source"], [doc]))
    return sources


def build_indexing_pipeline(document_store: QdrantDocumentStore, settings: Settings) -> Pipeline:
    """splitter → bm25 (jieba term frequencies) → embedder (dense) → writer (overwrite by stable id)."""
    pipeline = Pipeline()
    pipeline.add_component("splitter", StatuteSplitter())
    pipeline.add_component("bm25", JiebaBM25DocumentEncoder())
    pipeline.add_component("embedder", document_embedder(settings))
    pipeline.add_component("writer", QdrantPointWriter(document_store=document_store))
    pipeline.connect("splitter.documents", "bm25.documents")
    pipeline.connect("bm25.documents", "embedder.documents")
    pipeline.connect("embedder.documents", "writer.documents")
    return pipeline


class Indexer:
    """Runs the indexing pipeline over sources, keeping the store and its manifest consistent."""

    def __init__(self, store: QdrantDocumentStore, settings: Settings, pipeline: Pipeline | None = None) -> None:
        self.store = store
        self.manifest = SourceManifest(store)
        self.pipeline = pipeline or build_indexing_pipeline(store, settings)
        self.embedding = embedding_fingerprint(settings)

    def _source_counts(self) -> dict[str, int]:
        """Documents per source, in one pass over the collection (a filter per source would scan it each time)."""
        client = qdrant_client_of(self.store)
        counts: dict[str, int] = {}
        offset = None
        while True:
            points, offset = client.scroll(self.store.index, limit=4096, offset=offset,
                                           with_payload=["meta.source"], with_vectors=False)
            for point in points:
                source = ((point.payload or {}).get("meta") or {}).get("source")
                counts[source] = counts.get(source, 0) + 1
            if offset is None:
                return counts

    def _plan(self, source: Source, counts: dict[str, int]) -> str | None:
        """The action needed for a source, or None when the store already holds exactly this content."""
        record = self.manifest.get(source.name)
        if record is None:
            return "added"
        if record.status != COMPLETE:
            return "resumed"
        if record.content_hash != source.content_hash or counts.get(source.name, 0) != record.count:
            return "replaced"
        if record.embedding != self.embedding:  # same text, other embedding model: the vectors must be remade
            return "re-embedded"
        return None

    def index(self, sources: list[Source], progress: bool = True) -> list[SourceResult]:
        """Index every source; returns what happened to each one. Two sources with one name (e.g. two uploads
        called a.txt) would overwrite each other's articles: that is refused with a `ValueError`."""
        names = [source.name for source in sources]
        if duplicates := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"the same source given twice in one request: {', '.join(duplicates)}; rename one")
        counts = self._source_counts()
        results: list[SourceResult] = []
        pending: list[tuple[Source, str]] = []
        for source in sources:
            action = self._plan(source, counts)
            if action is None:
                results.append(SourceResult(source.name, "unchanged", counts.get(source.name, 0)))
            else:
                pending.append((source, action))
        total = sum(len(s.documents) for s, _ in pending)
        with tqdm(total=total, desc="indexing", unit="doc", disable=not progress or total == 0) as bar:
            for group in _groups(pending):
                results.extend(self._index_group(group, counts))
                bar.update(sum(len(s.documents) for s, _ in group))
        return results

    def _index_group(self, group: list[tuple[Source, str]], counts: dict[str, int]) -> list[SourceResult]:
        for source, _ in group:
            self.manifest.mark_indexing(source.name, source.content_hash)
            if counts.get(source.name):  # only a source already in the store has old articles to remove
                self.store.delete_by_filter({"field": "meta.source", "operator": "==", "value": source.name})
        documents = [doc for source, _ in group for doc in source.documents]
        output = self.pipeline.run({"splitter": {"documents": documents}}, include_outputs_from={"splitter"})
        written: dict[str, int] = {}
        for doc in output["splitter"]["documents"]:
            written[doc.meta["source"]] = written.get(doc.meta["source"], 0) + 1
        results = []
        for source, action in group:
            count = written.get(source.name, 0)
            self.manifest.mark_complete(source.name, source.content_hash, count, self.embedding)
            logger.info("{action} {source}: {count} documents", action=action, source=source.name, count=count)
            results.append(SourceResult(source.name, action, count))
        return results


def _groups(pending: list[tuple[Source, str]]) -> Iterable[list[tuple[Source, str]]]:
    group: list[tuple[Source, str]] = []
    size = 0
    for item in pending:
        group.append(item)
        size += len(item[0].documents)
        if size >= GROUP_SIZE:
            yield group
            group, size = [], 0
    if group:
        yield group
