"""OnnxTextEmbedder on its own: what it embeds (prefix, text, suffix, truncation) and that it is the query-side twin
of the document embedder. Equality with sentence-transformers, the shared encoder, serialisation and bad arguments
are in test_onnx_embedders.py."""

from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from helpers.text_encoding.onnx_encoder import EMBEDDING_DIM, onnx_dir

QUERY = "公司收集我的个人信息需要我同意吗"


@pytest.fixture(scope="module")
def export(e5_model: Path) -> str:
    return str(onnx_dir(e5_model))


def embed(embedder: OnnxTextEmbedder, text: str) -> np.ndarray:
    return np.array(embedder.run(text=text)["embedding"])


def test_the_embedding_is_a_unit_length_list_of_floats(export: str) -> None:
    embedding = OnnxTextEmbedder(model=export, prefix="query: ").run(text=QUERY)["embedding"]
    assert isinstance(embedding, list) and len(embedding) == EMBEDDING_DIM
    assert all(isinstance(x, float) for x in embedding)
    assert np.linalg.norm(embedding) == pytest.approx(1.0, abs=1e-5)


def test_prefix_and_suffix_wrap_the_text(export: str) -> None:
    wrapped = OnnxTextEmbedder(model=export, prefix="query: ", suffix="？")
    bare = OnnxTextEmbedder(model=export)
    assert np.allclose(embed(wrapped, QUERY), embed(bare, f"query: {QUERY}？"), atol=1e-6)
    assert not np.allclose(embed(wrapped, QUERY), embed(bare, QUERY), atol=1e-3)


def test_it_embeds_a_text_as_the_document_embedder_embeds_that_document(export: str) -> None:
    """The two sides of retrieval: same export, same prefix, same text → the same vector."""
    query = OnnxTextEmbedder(model=export, prefix="query: ")
    document = OnnxDocumentEmbedder(model=export, prefix="query: ", batch_size=1)
    as_document = document.run(documents=[Document(content=QUERY)])["documents"][0].embedding
    assert np.allclose(embed(query, QUERY), as_document, atol=1e-6)


def test_max_seq_length_cuts_the_text_before_it_is_pooled(export: str) -> None:
    """With 8 tokens kept, two texts that differ only after their first few words embed alike."""
    start = "处理个人信息应当取得个人同意，"
    first, second = start + "法律另有规定的除外。" * 3, start + "机动车应当按规定停放。" * 3
    short = OnnxTextEmbedder(model=export, max_seq_length=8)
    assert np.allclose(embed(short, first), embed(short, second), atol=1e-6)
    full = OnnxTextEmbedder(model=export)
    assert not np.allclose(embed(full, first), embed(full, second), atol=1e-3)


def test_it_embeds_without_an_explicit_warm_up(export: str) -> None:
    """A pipeline warms its components up; a component used on its own loads the encoder on first use."""
    warm = OnnxTextEmbedder(model=export, prefix="query: ")
    warm.warm_up()
    cold = OnnxTextEmbedder(model=export, prefix="query: ")
    assert np.allclose(embed(cold, QUERY), embed(warm, QUERY), atol=1e-6)
