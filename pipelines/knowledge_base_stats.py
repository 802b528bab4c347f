"""What a knowledge base holds, as one dict: the sources and their state, the models and BM25 statistics, and its
warnings. `python -m pipelines stats` prints it; the server's ``knowledge_bases`` deployment returns it
(``action: "stats"``), so the CLI beside a running server prints the same.

Usage::

    stats = knowledge_base_stats(open_document_store(settings), settings)
    stats["documents"], stats["sources"], stats["warnings"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import SourceManifest
from pipelines.embedders import embedding_fingerprint
from pipelines.judges import describe_judge
from pipelines.knowledge_base_warnings import knowledge_base_warnings


def knowledge_base_stats(store: KnowledgeBaseStore, settings: Settings) -> dict[str, Any]:
    """The knowledge base in ``store``: ``name``, ``where``, ``documents``, ``sources`` (status, count, source),
    ``models``, ``judge``, ``bm25`` (None before anything is indexed), ``engine`` and ``warnings``."""
    manifest, name = SourceManifest(store), store.knowledge_base
    records = manifest.all()
    count, length = manifest.corpus()
    return {
        "name": name, "where": settings.qdrant_url or str(settings.qdrant_path), "documents": store.count_documents(),
        "sources": [{"status": r.status, "count": r.count, "source": r.source} for r in records],
        "models": embedded_with(manifest, settings), "judge": describe_judge(settings),
        "bm25": {"k1": settings.bm25_k1, "b": settings.bm25_b, "average_terms": round(length / count, 1)}
        if count else None,
        "engine": store.engine,
        "warnings": knowledge_base_warnings(manifest, settings, name),
    }


def embedded_with(manifest: SourceManifest, settings: Settings) -> str:
    """Which embedder the complete sources' vectors were made with, as far as the current settings can tell (an
    interrupted source is reported as interrupted, not as embedded by another embedder)."""
    current = embedding_fingerprint(settings)
    records, others = manifest.all(), manifest.other_embeddings(current)
    name = Path(settings.embedding_model).name
    if not records:
        return f"embedder {name} (nothing indexed yet)"
    if not others:
        which = "complete source" if manifest.incomplete() else "source"
        return f"every {which} embedded with {name} ({settings.embedding_model}, fingerprint {current})"
    return f"{len(others)} of {len(records)} source(s) embedded with another embedder than {name} (re-run `index`)"
