"""The indexing pipeline: sources → articles → BM25 weights + dense embeddings → Qdrant.

`build_indexing_pipeline` is the Haystack `Pipeline` (also in ``yaml_pipelines/indexing.yaml``);
`Indexer` runs it source by source with a progress bar, idempotently (stable ids, overwrite), replacing a
source whose content changed and recording each source in the `SourceManifest`, so that an interrupted
run is detected and finished by the next one.

BM25 weights depend on the collection's average article length (``avgdl``). A run first measures the articles it
will write, so everything it writes is weighted with the average of the collection it leaves behind. Each source's
record keeps its length and the (k1, b, avgdl) its weights were written with; after indexing, the other sources
whose avgdl is now more than ``BM25_MAX_DRIFT`` off, or written with other k1/b, are reweighted in place: their
text is re-tokenised and only the sparse vectors are rewritten (no re-embedding), see `Indexer.reweight`.

Usage::

    from pipelines.indexing import Indexer, law_sources
    from config.settings import Settings
    from pipelines.stores import open_document_store

    settings = Settings.from_env()
    store = open_document_store(settings)
    report = Indexer(store, settings).index(law_sources(["个人信息保护法"]))
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from haystack import Document, Pipeline, logging
from haystack_integrations.document_stores.qdrant.converters import convert_id
from tqdm import tqdm

from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
from components.preprocessors.statute_splitter import StatuteSplitter
from components.writers.qdrant_point_writer import QdrantPointWriter
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import COMPLETE, SourceManifest, SourceRecord, completed
from document_store.statute_db import StatuteDB, content_hash, meta_hash
from document_store.text_files import load_text_file
from helpers.statutes.labels import VERSION_SEP
from pipelines.embedders import document_embedder, embedding_fingerprint

logger = logging.getLogger(__name__)

GROUP_SIZE = 4096  # articles per group: small sources are grouped so the encoder batches by length
PROGRESS_SLICE = 64  # articles per pipeline run when someone follows the progress (a server's upload job)


@dataclass(frozen=True)
class Source:
    """A named unit of indexing (one law or one file); re-indexing a name replaces its articles."""

    name: str
    documents: list[Document]

    @property
    def content_hash(self) -> str:
        return content_hash(self.documents)

    @property
    def meta_hash(self) -> str:
        return meta_hash(self.documents)


@dataclass(frozen=True)
class SourceResult:
    source: str
    action: str  # added | replaced | re-embedded | relabelled | unchanged | resumed | reweighted
    count: int


def law_sources(names: list[str], db: StatuteDB | None = None, versions: bool = False) -> list[Source]:
    """Sources for laws from the statute database: the version in force of each (``["all"]`` = every law in
    force, the 刑法 included); with ``versions``, also their older versions (for ``all``: every older version,
    repealed laws included) and, for an amended law, its articles' text before the later amendments."""
    db = db or StatuteDB()
    laws = list(dict.fromkeys(db.resolve(names)))
    sources = [Source(f"law:{name}", db.articles(name)) for name in laws]
    if versions:
        in_force = [v for v in db.versions() if v.in_force and v.law_name in laws]
        sources += [Source(v.source, db.version_articles(v)) for v in db.older_versions(names)]
        sources += [Source(f"{v.source}{VERSION_SEP}{v.version_date}", superseded)
                    for v in in_force if (superseded := db.superseded_articles(v))]
    return sources


def file_sources(paths: Iterable[str]) -> list[Source]:
    """Sources for .txt/.md files (raises `FileLoadError` with a one-line reason for a bad file)."""
    sources = []
    for path in paths:
        doc = load_text_file(path)
        sources.append(Source(doc.meta["source"], [doc]))
    return sources


def check_unique(sources: list[Source]) -> None:
    """Two sources with one name (e.g. two uploads called a.txt) would overwrite each other's articles: a
    `ValueError`."""
    names = [source.name for source in sources]
    if duplicates := sorted({name for name in names if names.count(name) > 1}):
        raise ValueError(f"the same source given twice in one request: {', '.join(duplicates)}; rename one")


def build_indexing_pipeline(document_store: KnowledgeBaseStore, settings: Settings, bulk: bool = True) -> Pipeline:
    """splitter → bm25 (jieba terms' BM25 weights) → embedder (dense) → writer (overwrite by stable id). ``bulk``:
    see `document_embedder` (a server indexing uploads passes False)."""
    pipeline = Pipeline()
    pipeline.add_component("splitter", StatuteSplitter())
    pipeline.add_component("bm25", JiebaBM25DocumentEncoder(k1=settings.bm25_k1, b=settings.bm25_b))
    pipeline.add_component("embedder", document_embedder(settings, bulk))
    pipeline.add_component("writer", QdrantPointWriter(document_store=document_store))
    pipeline.connect("splitter.documents", "bm25.documents")
    pipeline.connect("bm25.documents", "embedder.documents")
    pipeline.connect("embedder.documents", "writer.documents")
    return pipeline


class Indexer:
    """Runs the indexing pipeline over sources, keeping the store and its manifest consistent."""

    def __init__(self, store: KnowledgeBaseStore, settings: Settings, pipeline: Pipeline | None = None) -> None:
        self.store = store
        self.manifest = SourceManifest(store)
        self.pipeline = pipeline or build_indexing_pipeline(store, settings)
        self.embedding = embedding_fingerprint(settings)
        self.encoder: JiebaBM25DocumentEncoder = self.pipeline.get_component("bm25")
        self.max_drift = settings.bm25_max_drift

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
        if record.meta_hash != source.meta_hash:  # same text and vectors, new metadata: rewritten in place
            return "relabelled"
        return None

    def index(self, sources: list[Source], progress: bool = True,
              on_progress: Callable[[int, int], None] | None = None) -> list[SourceResult]:
        """Index every source; returns what happened to each one (other sources whose BM25 weights the run
        reweighted are logged). Two sources with one name (e.g. two uploads called a.txt) would overwrite each
        other's articles: that is refused with a `ValueError`.

        ``progress`` shows a progress bar; ``on_progress(done, total)`` is called with the articles written so far
        (a server's upload job reports it), every `PROGRESS_SLICE` articles."""
        check_unique(sources)
        counts = self.store.source_counts()
        results: list[SourceResult] = []
        pending: list[tuple[Source, str]] = []
        relabel: list[Source] = []
        for source in sources:
            action = self._plan(source, counts)
            if action is None:
                results.append(SourceResult(source.name, "unchanged", counts.get(source.name, 0)))
            elif action == "relabelled":
                relabel.append(source)
            else:
                pending.append((source, action))
        if relabel:
            results.extend(self.relabel(relabel, progress=progress))
        splitter = self.pipeline.get_component("splitter")
        articles = {source.name: splitter.run(documents=source.documents)["documents"] for source, _ in pending}
        total = sum(len(split) for split in articles.values())
        done = 0
        with self.encoder.counting_once(), \
                tqdm(total=total, desc="indexing", unit="article", disable=not progress or total == 0) as bar:

            def advance(count: int) -> None:
                nonlocal done
                done += count
                bar.update(count)
                if on_progress is not None:
                    on_progress(done, total)

            avgdl = self._avgdl_after(articles) if pending else 0.0  # every article counted here once, not twice
            for group in _groups(pending, articles):
                results.extend(self._index_group(group, counts, avgdl, articles, advance,
                                                 PROGRESS_SLICE if on_progress is not None else None))
        # sources whose weights this run's change of the average length left stale are rewritten now; the
        # result stays one entry per source asked for (an unchanged one that was reweighted says so)
        reweighted = {r.source: r for r in self.reweight(progress=progress)}
        if pending or relabel or reweighted:
            self.store.optimize()  # Edge: the HNSW graph over what was written (from its size threshold on)
        # (a relabelled one too: its payloads were rewritten in place before its weights were)
        return [reweighted[r.source] if r.action in ("unchanged", "relabelled") and r.source in reweighted else r
                for r in results]

    def _avgdl_after(self, articles: dict[str, list[Document]]) -> float:
        """The average BM25 length the collection will have once ``articles`` (by source) are written (inside
        `counting_once` the pipeline then reuses the counts made here)."""
        count, length = self.manifest.corpus(exclude=set(articles))
        for split in articles.values():
            count += len(split)
            length += sum(sum(self.encoder.term_counts(doc).values()) for doc in split)
        return length / count if count else 0.0

    def _index_group(self, group: list[tuple[Source, str]], counts: dict[str, int], avgdl: float,
                     articles: dict[str, list[Document]], advance: Callable[[int], None],
                     slice_size: int | None) -> list[SourceResult]:
        """Write the group's articles (in slices of ``slice_size``, else in one pipeline run; the splitter passes
        articles through unchanged) and mark its sources complete. A source resumed with the text, embedder and
        metadata of its interrupted run keeps the articles that run wrote (`_kept`): only the rest are embedded."""
        kept = self._kept(group)
        self.manifest.mark_indexing({source.name: source.content_hash for source, _ in group}, self.embedding,
                                    {source.name: source.meta_hash for source, _ in group})
        for source, _ in group:
            if counts.get(source.name) and source.name not in kept:  # old articles of a source to remove
                self.store.delete_by_filter({"field": "meta.source", "operator": "==", "value": source.name})
        written: dict[str, int] = {}
        lengths: dict[str, int] = {}
        documents = []
        for source, _ in group:
            for doc in articles[source.name]:
                if (doc.meta.get("key"), doc.content) not in kept.get(source.name, set()):
                    documents.append(doc)
                    continue
                written[source.name] = written.get(source.name, 0) + 1
                lengths[source.name] = lengths.get(source.name, 0) + sum(self.encoder.term_counts(doc).values())
        if done := sum(written.values()):
            advance(done)  # a resumed job's progress starts where its interrupted run stopped
        used_avgdl = avgdl
        step = slice_size or max(len(documents), 1)
        for start in range(0, len(documents), step):
            chunk = documents[start:start + step]
            bm25 = self.pipeline.run({"splitter": {"documents": chunk}, "bm25": {"avgdl": avgdl or None}},
                                     include_outputs_from={"bm25"})["bm25"]
            used_avgdl = bm25["avgdl"]
            for doc, length in zip(bm25["documents"], bm25["lengths"], strict=True):
                written[doc.meta["source"]] = written.get(doc.meta["source"], 0) + 1
                lengths[doc.meta["source"]] = lengths.get(doc.meta["source"], 0) + length
            advance(len(chunk))
        weighting = (self.encoder.k1, self.encoder.b, used_avgdl)
        self.manifest.mark_complete([completed(source.name, source.content_hash, written.get(source.name, 0),
                                               self.embedding, lengths.get(source.name, 0), weighting,
                                               source.meta_hash) for source, _ in group])
        results = [SourceResult(source.name, action, written.get(source.name, 0)) for source, action in group]
        for result in results:
            logger.info("{action} {source}: {count} documents", action=result.action, source=result.source,
                        count=result.count)
        return results

    def _kept(self, group: list[tuple[Source, str]]) -> dict[str, set[tuple[str | None, str | None]]]:
        """The (key, text) of the articles already stored for each source of ``group`` resumed with the text,
        embedder and metadata its interrupted run recorded (their vectors are this run's to the bit; their BM25
        weights were made with that run's average length, the same unless other sources changed meanwhile, and
        then within what `reweight` corrects)."""
        same = {source.name for source, action in group if action == "resumed"
                and (record := self.manifest.get(source.name)) is not None and record.embedding == self.embedding
                and record.content_hash == source.content_hash and record.meta_hash == source.meta_hash}
        kept: dict[str, set[tuple[str | None, str | None]]] = {name: set() for name in same}
        if same:
            for _, docs in self.store.scroll_sources(same):
                for doc in docs:
                    kept[doc.meta["source"]].add((doc.meta.get("key"), doc.content))
        return kept

    def relabel(self, sources: list[Source], progress: bool = True) -> list[SourceResult]:
        """Rewrite the stored metadata of ``sources`` whose text and vectors are unchanged (e.g. a store indexed
        before statute versions): one scroll over the collection, each point's ``meta`` replaced in place, nothing
        re-embedded. A point the source no longer explains is left alone (the next content change replaces it)."""
        splitter = self.pipeline.get_component("splitter")
        metas = {str(uuid.UUID(convert_id(doc.id))): doc.meta for source in sources
                 for doc in splitter.run(documents=source.documents)["documents"]}
        done: dict[str, int] = {}
        with tqdm(total=sum(len(s.documents) for s in sources), desc="updating metadata", unit="doc",
                  disable=not progress) as bar:
            for ids, batch in self.store.scroll_sources({source.name for source in sources}):
                explained = [(point_id, doc) for point_id, doc in zip(ids, batch, strict=True)
                             if str(point_id) in metas]
                self.store.set_metas([(point_id, metas[str(point_id)]) for point_id, _ in explained])
                for _, doc in explained:
                    done[doc.meta["source"]] = done.get(doc.meta["source"], 0) + 1
                bar.update(len(batch))
        for source in sources:
            record = self.manifest.get(source.name)
            if record is not None:
                self.manifest.relabelled(record, source.meta_hash)
            logger.info("relabelled {source}: {count} documents", source=source.name, count=done.get(source.name, 0))
        return [SourceResult(source.name, "relabelled", done.get(source.name, 0)) for source in sources]

    def stale_weights(self) -> list[SourceRecord]:
        """Sources whose BM25 weights the next `reweight` rewrites (see `SourceManifest.stale_weights`)."""
        return self.manifest.stale_weights(self.encoder.k1, self.encoder.b, self.max_drift)

    def reweight(self, force: bool = False, progress: bool = True) -> list[SourceResult]:
        """Rewrite the BM25 weights of the `stale_weights` sources (all of them with ``force``) with the
        collection's current average length: one scroll over the collection, the text re-tokenised, the sparse
        vectors updated in place (dense vectors and payloads are not touched)."""
        stale = {r.source: r for r in (self.manifest.all() if force else self.stale_weights()) if r.status == COMPLETE}
        if not stale:
            return []
        lengths = self._lengths(stale) if any(r.length == 0 for r in stale.values()) else {}
        records = {r.source: r for r in self.manifest.all() if r.status == COMPLETE}
        total = sum(r.count for r in records.values())
        if not total:  # only empty sources: nothing to weight
            return []
        avgdl = sum(lengths.get(name, r.length) for name, r in records.items()) / total
        done: dict[str, int] = {}
        with tqdm(total=sum(r.count for r in stale.values()), desc="reweighting BM25", unit="doc",
                  disable=not progress) as bar:
            for ids, batch in self.store.scroll_sources(set(stale)):
                encoded = self.encoder.run(documents=batch, avgdl=avgdl)["documents"]
                self.store.set_sparse([(point_id, doc.sparse_embedding) for point_id, doc
                                        in zip(ids, encoded, strict=True) if doc.sparse_embedding is not None])
                for doc in batch:
                    done[doc.meta["source"]] = done.get(doc.meta["source"], 0) + 1
                bar.update(len(batch))
        weighting = (self.encoder.k1, self.encoder.b, avgdl)
        for name, record in stale.items():
            self.manifest.reweighted(record, lengths.get(name, record.length), weighting)
            logger.info("reweighted {source}: {count} documents", source=name, count=done.get(name, 0))
        return [SourceResult(name, "reweighted", done.get(name, 0)) for name in stale]

    def _lengths(self, sources: dict[str, SourceRecord]) -> dict[str, int]:
        """The BM25 length of each of ``sources``, tokenised from the store (records from older versions lack it)."""
        lengths: dict[str, int] = {}
        for _, batch in self.store.scroll_sources(set(sources)):
            for doc in batch:
                lengths[doc.meta["source"]] = lengths.get(doc.meta["source"], 0) + sum(
                    self.encoder.term_counts(doc).values())
        return lengths


def _groups(pending: list[tuple[Source, str]],
            articles: dict[str, list[Document]]) -> Iterable[list[tuple[Source, str]]]:
    """Sources in groups of about `GROUP_SIZE` articles (small sources together: the encoder batches by length)."""
    group: list[tuple[Source, str]] = []
    size = 0
    for item in pending:
        group.append(item)
        size += len(articles[item[0].name])
        if size >= GROUP_SIZE:
            yield group
            group, size = [], 0
    if group:
        yield group
