"""OnnxDocumentEmbedder on its own: the text it embeds and how each document gets its vector back. Equality with
sentence-transformers, the shared encoder, serialisation and bad arguments are in test_onnx_embedders.py."""

from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from helpers.text_encoding.onnx_encoder import EMBEDDING_DIM, onnx_dir


@pytest.fixture(scope="module")
def export(e5_model: Path) -> str:
    return str(onnx_dir(e5_model))


def test_text_to_embed_puts_the_meta_values_first_in_the_order_asked() -> None:
    embedder = OnnxDocumentEmbedder(model="unused", prefix="passage: ", suffix="。",
                                    meta_fields_to_embed=["chapter", "law", "year"], embedding_separator=" | ")
    doc = Document(content="处理个人信息应当取得个人同意",
                   meta={"law": "个人信息保护法", "chapter": "第二章", "year": 2021})
    assert embedder.text_to_embed(doc) == "passage: 第二章 | 个人信息保护法 | 2021 | 处理个人信息应当取得个人同意。"


def test_text_to_embed_skips_absent_and_none_meta_and_reads_no_content_as_empty() -> None:
    embedder = OnnxDocumentEmbedder(model="unused", meta_fields_to_embed=["law", "chapter"])
    assert embedder.text_to_embed(Document(content="正文", meta={"chapter": None})) == "正文"
    assert embedder.text_to_embed(Document(content=None, meta={"law": "民法典"})) == "民法典\n"
    assert embedder.text_to_embed(Document(content="正文", meta={"law": 0})) == "0\n正文"  # a falsy value is a value
    no_meta = OnnxDocumentEmbedder(model="unused")
    assert no_meta.text_to_embed(Document(content="正文", meta={"law": "民法典"})) == "正文"


def test_each_document_gets_a_unit_vector_and_keeps_its_id_and_meta(export: str) -> None:
    docs = [Document(content="机动车应当按规定停放。", meta={"law": "交通法"}),
            Document(content="个人有权撤回其同意。")]
    embedded = OnnxDocumentEmbedder(model=export).run(documents=docs)["documents"]
    assert [(d.id, d.content, d.meta) for d in embedded] == [(d.id, d.content, d.meta) for d in docs]
    vectors = np.array([d.embedding for d in embedded])
    assert vectors.shape == (2, EMBEDDING_DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-3)


def test_vectors_return_to_their_documents_whatever_the_order(export: str) -> None:
    """The encoder batches the longest texts first; one at a time a vector depends on its text alone, so reversing
    the input must reverse the output."""
    texts = ("短", "处理个人信息应当取得个人同意，法律另有规定的除外。", "个人有权撤回同意")
    docs = [Document(content=text) for text in texts]
    embedder = OnnxDocumentEmbedder(model=export, batch_size=1)
    forward = [d.embedding for d in embedder.run(documents=docs)["documents"]]
    backward = [d.embedding for d in embedder.run(documents=docs[::-1])["documents"]]
    assert np.allclose(np.array(forward), np.array(backward[::-1]), atol=1e-6)


def test_embedded_meta_fields_change_the_vector(export: str) -> None:
    first, second = (Document(content="应当取得个人同意。", meta={"law": law})
                     for law in ("个人信息保护法", "道路交通安全法"))
    plain = OnnxDocumentEmbedder(model=export).run(documents=[first, second])["documents"]
    assert np.allclose(plain[0].embedding, plain[1].embedding, atol=1e-6)
    with_law = OnnxDocumentEmbedder(model=export, meta_fields_to_embed=["law"]).run(documents=[first, second])
    vectors = [d.embedding for d in with_law["documents"]]
    assert not np.allclose(vectors[0], vectors[1], atol=1e-3)


def test_no_documents_give_no_documents(export: str) -> None:
    assert OnnxDocumentEmbedder(model=export).run(documents=[]) == {"documents": []}


def test_a_list_holding_anything_but_documents_is_refused(export: str) -> None:
    with pytest.raises(TypeError, match="expects a list of Documents"):
        OnnxDocumentEmbedder(model=export).run(documents=[Document(content="甲"), "乙"])  # type: ignore[list-item]

