"""The torch-free ONNX embedders: the same vectors as sentence-transformers running the same export."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.core.serialization import component_from_dict, component_to_dict

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from helpers.text_encoding.onnx_encoder import INT8_FILE, OnnxEncoder, onnx_dir, shared_encoder

LONG = "中华人民共和国个人信息保护法第十三条 处理个人信息应当取得个人同意 abc " * 120  # beyond 512 tokens
TEXTS = ["query: 公司收集我的个人信息需要我同意吗", "passage: " + LONG, "x", "Ünïcode ﬁ　全角ＡＢＣ", ""]
DOCS = [Document(content="处理个人信息应当取得个人同意。", meta={"law": "个人信息保护法", "chapter": "第二章"}),
        Document(content=LONG, meta={"law": "民法典", "chapter": None}),
        Document(content=None, meta={"chapter": "第一章"}),
        Document(content="机动车应当按规定停放。")]


@pytest.fixture(scope="module")
def export(e5_model: Path) -> Path:
    return onnx_dir(e5_model)


@pytest.fixture(scope="module")
def sentence_transformer(export: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(export), trust_remote_code=True, local_files_only=True, device="cpu",
                               model_kwargs={"file_name": INT8_FILE})


def test_tokens_are_those_of_the_models_own_tokenizer(export: Path, e5_model: Path):
    from transformers import AutoTokenizer

    expected = AutoTokenizer.from_pretrained(str(e5_model), local_files_only=True)(
        TEXTS, padding=True, truncation=True, max_length=512, return_tensors="np")
    tokens = OnnxEncoder(export).tokenize(TEXTS)
    assert tokens["input_ids"].shape == (len(TEXTS), 512)  # the long text was cut at 512 tokens
    assert (tokens["input_ids"] == expected["input_ids"]).all()
    assert (tokens["attention_mask"] == expected["attention_mask"]).all()


def test_vectors_equal_sentence_transformers_in_the_order_given(export: Path, sentence_transformer):
    # equal for the same batches: int8 dynamic quantisation scales activations per batch, so a text's vector
    # moves a little with its batch companions (both batch longest first)
    encoder = OnnxEncoder(export)
    for batch_size in (1, 2, 32):
        expected = sentence_transformer.encode(TEXTS, normalize_embeddings=True, batch_size=batch_size)
        vectors = encoder.encode(TEXTS, batch_size=batch_size)
        assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
        assert np.abs(vectors - expected).max() < 1e-5, batch_size
    assert encoder.encode([]).shape == (0, 384)


def test_text_and_document_embedders_match_haystacks_sentence_transformers_embedders(export: Path):
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

    common = {"model": str(export), "trust_remote_code": True, "local_files_only": True, "progress_bar": False,
              "model_kwargs": {"file_name": INT8_FILE}, "normalize_embeddings": True}
    reference_docs = SentenceTransformersDocumentEmbedder(prefix="passage: ", meta_fields_to_embed=["law", "chapter"],
                                                          **common)
    reference_query = SentenceTransformersTextEmbedder(prefix="query: ", **common)
    ours_docs = OnnxDocumentEmbedder(model=str(export), prefix="passage: ", meta_fields_to_embed=["law", "chapter"])
    ours_query = OnnxTextEmbedder(model=str(export), prefix="query: ")
    for embedder in (reference_docs, reference_query, ours_docs, ours_query):
        embedder.warm_up()
    expected = reference_docs.run(documents=DOCS)["documents"]
    embedded = ours_docs.run(documents=DOCS)["documents"]
    assert [d.content for d in embedded] == [d.content for d in DOCS]  # new Documents, the inputs left alone
    assert all(d.embedding is None for d in DOCS)
    for ours, theirs in zip(embedded, expected, strict=True):
        assert isinstance(ours.embedding, list) and np.abs(np.array(ours.embedding) - theirs.embedding).max() < 1e-5
    query = ours_query.run(text="公司收集我的个人信息需要我同意吗")["embedding"]
    assert np.abs(np.array(query)
                  - reference_query.run(text="公司收集我的个人信息需要我同意吗")["embedding"]).max() < 1e-5
    assert ours_docs.text_to_embed(DOCS[1]).startswith("passage: 民法典\n中华人民共和国")  # None meta is skipped


def spins(encoder: OnnxEncoder) -> bool:
    return encoder.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "1"


def test_embedders_of_one_process_share_one_encoder(export: Path):
    # a server's document embedder (no spinning) shares the query embedder's encoder: one ONNX session
    text, documents = OnnxTextEmbedder(model=str(export)), OnnxDocumentEmbedder(model=str(export), allow_spinning=False)
    text.warm_up()
    documents.warm_up()
    assert text._encoder is documents._encoder is shared_encoder(str(export))
    assert not spins(text.encoder())
    # by default the document embedder encodes in bulk with spinning threads (its own session), the same vectors
    bulk = OnnxDocumentEmbedder(model=str(export))
    assert bulk.encoder() is not text.encoder() and spins(bulk.encoder())
    assert bulk.encoder() is OnnxDocumentEmbedder(model=str(export)).encoder()
    vectors = [np.array([d.embedding for d in e.run(documents=DOCS)["documents"]]) for e in (bulk, documents)]
    assert np.abs(vectors[0] - vectors[1]).max() < 1e-6


def test_serialisation_round_trip(export: Path):
    embedder = OnnxDocumentEmbedder(model=str(export), prefix="passage: ", meta_fields_to_embed=["law"],
                                    batch_size=4, max_seq_length=256, intra_op_num_threads=1, allow_spinning=False)
    data = component_to_dict(embedder, "embedder")
    restored = component_from_dict(OnnxDocumentEmbedder, data, "embedder")
    assert component_to_dict(restored, "embedder") == data
    assert data["init_parameters"]["meta_fields_to_embed"] == ["law"] and data["init_parameters"]["batch_size"] == 4
    assert restored.allow_spinning is False and component_to_dict(OnnxDocumentEmbedder(model="m"), "e")[
        "init_parameters"]["allow_spinning"] is True
    text = OnnxTextEmbedder(model=str(export), prefix="query: ", max_seq_length=128)
    assert component_to_dict(component_from_dict(OnnxTextEmbedder, component_to_dict(text, "t"), "t"), "t") == (
        component_to_dict(text, "t"))


def test_bad_arguments_and_inputs_are_clear_errors(export: Path, tmp_path: Path):
    with pytest.raises(ValueError, match="model"):
        OnnxTextEmbedder(model="")
    with pytest.raises(ValueError, match="batch_size"):
        OnnxDocumentEmbedder(model=str(export), batch_size=0)
    with pytest.raises(ValueError, match="max_seq_length"):
        OnnxTextEmbedder(model=str(export), max_seq_length=1)
    with pytest.raises(ValueError, match="intra_op_num_threads"):
        OnnxDocumentEmbedder(model=str(export), intra_op_num_threads=-1)
    with pytest.raises(TypeError, match="string"):
        OnnxTextEmbedder(model=str(export)).run(text=["not", "a", "string"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Documents"):
        OnnxDocumentEmbedder(model=str(export)).run(documents="处理个人信息")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="setup"):
        OnnxTextEmbedder(model=str(tmp_path)).warm_up()


def test_an_export_with_other_pooling_is_refused(export: Path, tmp_path: Path):
    copy = tmp_path / "onnx"
    copy.mkdir()
    for name in (INT8_FILE, "onnx_transformer_config.json"):
        (copy / name).symlink_to(export / name)
    shutil.copytree(export / "1_Pooling", copy / "1_Pooling")
    config = json.loads((copy / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (copy / "1_Pooling" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (copy / "onnx_transformer_config.json").unlink()
    (copy / "onnx_transformer_config.json").write_text(json.dumps({"tokenizer_path": str(export.parent)}),
                                                      encoding="utf-8")
    with pytest.raises(ValueError, match="only mean pooling"):
        OnnxEncoder(copy)


def test_both_pooling_config_formats_are_read():
    from helpers.text_encoding.onnx_encoder import mean_pooling

    assert mean_pooling({"embedding_dimension": 384, "pooling_mode": "mean", "include_prompt": True})  # ST 6
    assert mean_pooling({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False})  # older folders
    assert not mean_pooling({"pooling_mode": "cls"})
    assert not mean_pooling({"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True})
