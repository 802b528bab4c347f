"""Sentence-transformers embedders configured from settings (one place for model, prefixes and backend).

Backends (``EMBEDDING_BACKEND``):

- ``torch``: the model folder as it is (fp32);
- ``onnx-int8``: the int8 ONNX export of the same folder (``<model>/onnx``, built by ``python -m pipelines setup``),
  run by ONNX Runtime through this repo's `OnnxTextEmbedder` / `OnnxDocumentEmbedder`, which need neither torch nor
  sentence-transformers (a serving process is about 450 MiB smaller); sentence-transformers loads the same export
  through `pipelines.onnx_runtime` where a `SentenceTransformer` object is needed (benchmarks; the studies did too).

Usage::

    from pipelines.embedders import document_embedder, text_embedder
    embedder = text_embedder(Settings.from_env())
    embedder.warm_up()
    vector = embedder.run(text="公司收集个人信息需要同意吗")["embedding"]
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from config.settings import Settings
from helpers.text_encoding.jieba_tokenizer import DEFAULT_CHAR_NGRAMS

if TYPE_CHECKING:  # imported where used: sentence-transformers brings torch, which the ONNX backend does not need
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

META_FIELDS_TO_EMBED = ["law", "chapter"]
BACKENDS = ("torch", "onnx-int8")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def model_arguments(settings: Settings) -> dict[str, Any]:
    """``model`` and loading options for the configured backend."""
    if settings.embedding_backend not in BACKENDS:
        raise ValueError(f"EMBEDDING_BACKEND must be one of {BACKENDS}, got {settings.embedding_backend!r}")
    folder = Path(settings.embedding_model)
    if settings.embedding_backend == "torch":
        return {"model": settings.embedding_model, "local_files_only": folder.exists()}
    from helpers.text_encoding.onnx_encoder import INT8_FILE, onnx_dir

    if not folder.exists():
        raise ValueError(f"EMBEDDING_BACKEND=onnx-int8 needs a local model folder, got {settings.embedding_model!r}")
    return {
        "model": str(onnx_dir(folder)),
        "local_files_only": True,
        "trust_remote_code": True,  # the ONNX module is this repo's own code, nothing is downloaded
        "model_kwargs": {"file_name": INT8_FILE},
    }


def _common(settings: Settings) -> dict[str, Any]:
    return {
        **model_arguments(settings),
        "batch_size": settings.embedding_batch_size,
        "progress_bar": False,
        "normalize_embeddings": True,
    }


def document_embedder(settings: Settings,
                      bulk: bool = True) -> OnnxDocumentEmbedder | SentenceTransformersDocumentEmbedder:
    """Embeds articles as ``passage: <law>\\n<chapter>\\n<text>``. ``bulk``: this process indexes and does not
    serve queries meanwhile (the ONNX encoder's threads may spin; a server passes False and keeps one encoder)."""
    if settings.embedding_backend == "onnx-int8":
        arguments = model_arguments(settings)
        return OnnxDocumentEmbedder(model=arguments["model"], file_name=arguments["model_kwargs"]["file_name"],
                                    prefix=settings.passage_prefix, meta_fields_to_embed=META_FIELDS_TO_EMBED,
                                    batch_size=settings.embedding_batch_size, allow_spinning=bulk)
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

    return SentenceTransformersDocumentEmbedder(
        prefix=settings.passage_prefix, meta_fields_to_embed=META_FIELDS_TO_EMBED, **_common(settings)
    )


def text_embedder(settings: Settings) -> OnnxTextEmbedder | SentenceTransformersTextEmbedder:
    """Embeds queries as ``query: <text>``."""
    if settings.embedding_backend == "onnx-int8":
        arguments = model_arguments(settings)
        return OnnxTextEmbedder(model=arguments["model"], file_name=arguments["model_kwargs"]["file_name"],
                                prefix=settings.query_prefix)
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

    return SentenceTransformersTextEmbedder(prefix=settings.query_prefix, **_common(settings))


@lru_cache(maxsize=8)
def _digest(path: str, size: int, mtime: float) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def embedding_fingerprint(settings: Settings) -> str:
    """Identifies the vectors indexing makes: backend, the weights' digest (the model name for a hub model),
    passage prefix, the embedded meta fields and the dimension, and the BM25 terms' character n-grams. Indexing
    records it per source; a knowledge base built with other vectors is re-embedded by the next `index` run and
    flagged until then."""
    arguments = model_arguments(settings)
    folder = Path(arguments["model"])
    names = [arguments["model_kwargs"]["file_name"]] if "model_kwargs" in arguments else list(WEIGHT_FILES)
    weights = next((folder / name for name in names if (folder / name).is_file()), None)
    identity = _digest(str(weights), weights.stat().st_size, weights.stat().st_mtime) if weights else arguments["model"]
    text = "|".join([settings.embedding_backend, identity, settings.passage_prefix, ",".join(META_FIELDS_TO_EMBED),
                     str(settings.embedding_dim), f"bm25-char-ngrams={list(DEFAULT_CHAR_NGRAMS)}"])
    return hashlib.sha256(text.encode()).hexdigest()[:16]
