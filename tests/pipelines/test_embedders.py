"""`pipelines.embedders`: the embedders built from settings and the fingerprint of the vectors they make (the ONNX
embedders' vectors are in components/embedders/test_onnx_embedders.py; a store flagged and re-embedded after a
change of fingerprint in test_indexing.py)."""

import dataclasses
import os
import re
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from config.settings import Settings
from helpers.text_encoding.onnx_encoder import INT8_FILE, shared_encoder
from pipelines.embedders import (
    META_FIELDS_TO_EMBED,
    document_embedder,
    embedding_fingerprint,
    model_arguments,
    text_embedder,
)


def model_folder(root: Path, weights: bytes, name: str = f"onnx/{INT8_FILE}") -> Path:
    """A model folder holding only its weights file (all the fingerprint reads)."""
    path = root / name
    path.parent.mkdir(parents=True)
    path.write_bytes(weights)
    return root


def onnx(folder: Path, **changes) -> Settings:
    return Settings(embedding_model=str(folder), embedding_backend="onnx-int8", **changes)


def test_the_onnx_backend_runs_the_int8_export_in_the_model_folder(tmp_path: Path) -> None:
    assert model_arguments(onnx(tmp_path)) == {"model": str(tmp_path / "onnx"), "local_files_only": True,
                                               "trust_remote_code": True, "model_kwargs": {"file_name": INT8_FILE}}


def test_the_torch_backend_loads_a_local_folder_offline_and_a_hub_name_as_it_is(tmp_path: Path) -> None:
    assert model_arguments(Settings(embedding_model=str(tmp_path), embedding_backend="torch")) == {
        "model": str(tmp_path), "local_files_only": True}
    assert model_arguments(Settings(embedding_model="intfloat/multilingual-e5-small", embedding_backend="torch")) == {
        "model": "intfloat/multilingual-e5-small", "local_files_only": False}


def test_an_unknown_backend_or_an_onnx_model_without_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^EMBEDDING_BACKEND must be one of \('torch', 'onnx-int8'\), got 'onnx'$"):
        model_arguments(Settings(embedding_model=str(tmp_path), embedding_backend="onnx"))
    with pytest.raises(ValueError, match="onnx-int8 needs a local model folder, got 'intfloat/multilingual-e5-small'"):
        model_arguments(onnx(Path("intfloat/multilingual-e5-small")))


def test_the_onnx_embedders_take_the_prefixes_and_the_batch_from_settings(tmp_path: Path) -> None:
    settings = onnx(tmp_path, passage_prefix="passage:: ", query_prefix="q: ", embedding_batch_size=3)
    documents, server_documents, query = document_embedder(settings), document_embedder(settings, bulk=False), (
        text_embedder(settings))
    assert isinstance(documents, OnnxDocumentEmbedder) and isinstance(query, OnnxTextEmbedder)
    assert documents.model == query.model == str(tmp_path / "onnx") and documents.file_name == INT8_FILE
    assert documents.batch_size == 3 and documents.meta_fields_to_embed == META_FIELDS_TO_EMBED
    assert documents.allow_spinning and not server_documents.allow_spinning  # a server keeps one encoder
    article = Document(content="处理个人信息应当取得个人同意。", meta={"law": "个人信息保护法", "chapter": "第二章"})
    assert documents.text_to_embed(article) == "passage:: 个人信息保护法\n第二章\n处理个人信息应当取得个人同意。"
    assert query.prefix == "q: "


def test_a_query_is_embedded_with_the_query_prefix(e5_model: Path) -> None:
    settings = onnx(e5_model)
    embedder = text_embedder(settings)
    embedder.warm_up()
    vector = np.array(embedder.run(text="公司收集我的个人信息需要我同意吗")["embedding"])
    encoder = shared_encoder(e5_model / "onnx")
    question = "公司收集我的个人信息需要我同意吗"
    with_prefix, without = encoder.encode(["query: " + question, question], batch_size=1)
    assert np.abs(vector - with_prefix).max() < 1e-6 and np.abs(vector - without).max() > 1e-3


def test_the_fingerprint_follows_the_weights_not_the_folders_path(tmp_path: Path) -> None:
    """A model folder moved or copied elsewhere makes the same vectors: its knowledge bases are not re-embedded."""
    here, there = model_folder(tmp_path / "a", b"weights"), model_folder(tmp_path / "b", b"weights")
    fingerprint = embedding_fingerprint(onnx(here))
    assert re.fullmatch("[0-9a-f]{16}", fingerprint)
    assert embedding_fingerprint(onnx(there)) == fingerprint
    assert embedding_fingerprint(onnx(model_folder(tmp_path / "c", b"retrained"))) != fingerprint


@pytest.mark.parametrize("change", [{"passage_prefix": "passage:: "}, {"embedding_dim": 768}])
def test_the_fingerprint_changes_with_what_the_vectors_are_made_with(tmp_path: Path, change: dict) -> None:
    settings = onnx(model_folder(tmp_path, b"weights"))
    assert embedding_fingerprint(dataclasses.replace(settings, **change)) != embedding_fingerprint(settings)


def test_the_query_side_settings_do_not_change_the_fingerprint(tmp_path: Path) -> None:
    """What only queries use (their prefix, the batch size) leaves the stored vectors valid."""
    settings = onnx(model_folder(tmp_path, b"weights"))
    same = dataclasses.replace(settings, query_prefix="q: ", embedding_batch_size=32)
    assert embedding_fingerprint(same) == embedding_fingerprint(settings)


def test_the_torch_fingerprint_reads_either_weights_file_and_a_hub_model_by_its_name(tmp_path: Path) -> None:
    safetensors = model_folder(tmp_path / "a", b"w", "model.safetensors")
    legacy = model_folder(tmp_path / "b", b"w", "pytorch_model.bin")
    torch = [embedding_fingerprint(Settings(embedding_model=str(folder), embedding_backend="torch"))
             for folder in (safetensors, legacy)]
    assert torch[0] == torch[1] != embedding_fingerprint(onnx(model_folder(tmp_path / "c", b"w")))  # the backend
    hub = [embedding_fingerprint(Settings(embedding_model=name, embedding_backend="torch"))
           for name in ("intfloat/multilingual-e5-small", "intfloat/multilingual-e5-base")]
    assert hub[0] != hub[1]


def test_a_rewritten_weights_file_gives_a_new_fingerprint(tmp_path: Path) -> None:
    folder = model_folder(tmp_path, b"weights")
    before = embedding_fingerprint(onnx(folder))
    weights = folder / "onnx" / INT8_FILE
    weights.write_bytes(b"weights, retrained")
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert embedding_fingerprint(onnx(folder)) != before
