"""What makes a knowledge base's results unreliable, said once, in one sentence each with the command that fixes
it: interrupted sources, out-of-date BM25 weights, statute sources without versions, another embedder, and an
``as_of`` day for which the knowledge base holds no version of a law the question names. The CLI prints them; every
API result carries them (``RAGResult.warnings``).

Usage::

    knowledge_base_warnings(SourceManifest(store), settings, "statutes")
    as_of_warnings(retrieval_pipeline, "商标法第十条", "2020-01-01")
"""

from __future__ import annotations

from typing import Any

from haystack import Pipeline

from components.retrievers.citation_lookup import CitationLookup, VersionGap
from config.settings import Settings
from document_store.source_manifest import SourceManifest, SourceRecord
from helpers.records.contracts import RetrievalPath
from helpers.statutes.labels import LAW_NAME_PREFIX
from helpers.statutes.versions import date_text
from pipelines.embedders import embedding_fingerprint


def stale_weight_sources(manifest: SourceManifest, settings: Settings) -> list[SourceRecord]:
    """The sources whose BM25 weights are out of date under ``settings`` (what `Indexer.reweight` rewrites), found
    without building an indexer."""
    return manifest.stale_weights(settings.bm25_k1, settings.bm25_b, settings.bm25_max_drift)


def _option(collection: str | None) -> str:
    """The ``--collection`` option of a command a warning suggests (none when no collection is named)."""
    return f" --collection {collection}" if collection else ""


def stale_weights_warning(count: int, collection: str | None = None) -> str:
    """What the CLI and the service say about ``count`` sources with out-of-date BM25 weights."""
    return (f"the BM25 weights of {count} source(s) are out of date (an older store, other BM25_K1/BM25_B, or a "
            "collection whose average length has moved), so keyword search ranks them wrongly. Run "
            f"`python -m pipelines reweight{_option(collection)}` (or the next `index`) to rewrite them.")


def unversioned_warning(count: int, collection: str | None = None) -> str:
    """What the CLI and the service say about ``count`` statute sources indexed before statute versions."""
    return (f"{count} law source(s) were indexed before articles carried their versions: as_of cannot select "
            "their versions, their amendments are not linked, and the 刑法 may be missing. Run "
            f"`python -m pipelines index --laws all{_option(collection)}` (or the same --laws) to update them in place "
            "(nothing is re-embedded).")


def incomplete_warning(sources: list[str], collection: str | None = None) -> str:
    """What the CLI and the service say about ``sources`` whose indexing was interrupted."""
    named = ", ".join(sources[:3]) + (", …" if len(sources) > 3 else "")
    return (f"{len(sources)} source(s) were interrupted during indexing ({named}), so results may be incomplete. "
            f"Re-run `python -m pipelines index{_option(collection)}` with the same --laws/--files to finish them.")


def other_embedder_warning(count: int, collection: str | None = None) -> str:
    """What the CLI and the service say about ``count`` complete sources embedded by another embedder."""
    return (f"{count} source(s) were embedded with another embedding model or settings (dense vectors or BM25 terms) "
            "than the current ones, so retrieval on them is unreliable. Re-run "
            f"`python -m pipelines index{_option(collection)}` with the same sources to re-embed them.")


def knowledge_base_warnings(manifest: SourceManifest, settings: Settings, collection: str | None = None) -> list[str]:
    """Everything about a knowledge base that makes its results unreliable, one sentence each with the command that
    fixes it: interrupted sources, out-of-date BM25 weights, statute sources without versions, and complete sources
    embedded by another embedder (an interrupted one is reported as interrupted only)."""
    warnings = []
    if incomplete := manifest.incomplete():
        warnings.append(incomplete_warning([record.source for record in incomplete], collection))
    if stale := stale_weight_sources(manifest, settings):
        warnings.append(stale_weights_warning(len(stale), collection))
    if unversioned := manifest.unversioned():
        warnings.append(unversioned_warning(len(unversioned), collection))
    if others := manifest.other_embeddings(embedding_fingerprint(settings)):
        warnings.append(other_embedder_warning(len(others), collection))
    return warnings


def as_of_warning(gap: VersionGap, collection: str | None = None) -> str:
    """What a result says when ``as_of`` asks for a day on which the knowledge base holds no version of a law the
    question names (the search then answers from other laws)."""
    if gap.held_from > gap.as_of:
        held, fix = f"现有版本自 {date_text(gap.held_from)} 起施行", "加入历史版本"
    elif gap.held_to <= gap.as_of:
        held, fix = f"现有版本自 {date_text(gap.held_to)} 起不再适用", "加入它的各个版本"
    else:
        held, fix = "现有版本在该日都不适用", "加入它的各个版本"
    return (f"知识库中没有《{gap.law}》在 {date_text(gap.as_of)} 有效的版本（{held}）；用 "
            f"`python -m pipelines index --laws {gap.law.removeprefix(LAW_NAME_PREFIX)} "
            f"--versions{_option(collection)}` {fix}")


def as_of_warnings(pipeline: Pipeline, query: str, as_of: str | None, filters: dict[str, Any] | None = None,
                   collection: str | None = None) -> list[str]:
    """`as_of_warning` for each law ``query`` names that the knowledge base of the query ``pipeline`` holds in no
    version in force on ``as_of`` (none without ``as_of``), found by the pipeline's citation lookup."""
    lookup: CitationLookup = pipeline.get_component(RetrievalPath.CITATION.value)
    return [as_of_warning(gap, collection) for gap in lookup.version_gaps(query, as_of, filters)]
