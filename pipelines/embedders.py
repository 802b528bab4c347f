"""Sentence-transformers embedders configured from settings (one place for model, prefixes and backend).

Usage::

    from pipelines.embedders import document_embedder, text_embedder
    embedder = text_embedder(Settings.from_env())
    embedder.warm_up()
    vector = embedder.run(text="公司收集个人信息需要同意吗")["embedding"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
)

from pipelines.settings import Settings

META_FIELDS_TO_EMBED = ["law", "chapter"]


def _common(settings: Settings) -> dict[str, Any]:
    local = Path(settings.embedding_model).exists()
    return {
        "model": settings.embedding_model,
        "batch_size": settings.embedding_batch_size,
        "progress_bar": False,
        "normalize_embeddings": True,
        "local_files_only": local,
        "backend": settings.embedding_backend,
    }


def document_embedder(settings: Settings) -> SentenceTransformersDocumentEmbedder:
    """Embeds articles as ``passage: <law>\\n<chapter>\\n<text>``."""
    return SentenceTransformersDocumentEmbedder(
        prefix=settings.passage_prefix, meta_fields_to_embed=META_FIELDS_TO_EMBED, **_common(settings)
    )


def text_embedder(settings: Settings) -> SentenceTransformersTextEmbedder:
    """Embeds queries as ``query: <text>``."""
    return SentenceTransformersTextEmbedder(prefix=settings.query_prefix, **_common(settings))


def load_sentence_transformer(settings: Settings) -> Any:
    """The bare `SentenceTransformer` the embedders wrap (for benchmarks that compare against it)."""
    from sentence_transformers import SentenceTransformer

    common = _common(settings)
    return SentenceTransformer(
        common["model"], local_files_only=common["local_files_only"], backend=common["backend"], device="cpu"
    )
