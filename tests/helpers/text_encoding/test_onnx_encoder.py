"""`helpers.text_encoding.onnx_encoder` on the suite's e5 export: truncation, batching, the checks of its folder and
arguments, and the shared encoder (its vectors against sentence-transformers are in
components/embedders/test_onnx_embedders.py)."""

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers.text_encoding.onnx_encoder import (
    EMBEDDING_DIM,
    INT8_FILE,
    MODULE_CONFIG,
    POOLING_CONFIG,
    OnnxEncoder,
    UsesSharedEncoder,
    check_encoder_arguments,
    onnx_dir,
    shared_encoder,
)
from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE, MODEL_FILE

TEXTS = ["query: 公司收集我的个人信息需要我同意吗", "passage: 处理个人信息应当取得个人同意。" * 3, "x"]


@pytest.fixture(scope="module")
def export(e5_model: Path) -> Path:
    return onnx_dir(e5_model)


@pytest.fixture(scope="module")
def encoder(export: Path) -> OnnxEncoder:
    return shared_encoder(export)


def copy_of(export: Path, folder: Path, config: str | None) -> Path:
    """The export's big files linked into ``folder``, with ``config`` as its module config (None: none)."""
    folder.mkdir()
    for name in (INT8_FILE, MODEL_FILE, CONFIG_FILE):
        (folder / name).symlink_to(export / name)
    shutil.copytree(export / POOLING_CONFIG.parent, folder / POOLING_CONFIG.parent)
    if config is not None:
        (folder / MODULE_CONFIG).write_text(config, encoding="utf-8")
    return folder


def test_padding_goes_to_the_longest_text_and_the_mask_marks_the_real_tokens(encoder: OnnxEncoder) -> None:
    features = encoder.tokenize(TEXTS)
    ids, mask = features["input_ids"], features["attention_mask"]
    assert ids.dtype == mask.dtype == np.int64 and ids.shape == mask.shape
    lengths = mask.sum(axis=1)
    assert ids.shape[1] == lengths.max() == lengths[1]  # the longest text sets the width
    assert (ids[2, lengths[2]:] == encoder.tokenizer.pad_id).all() and (mask[2, lengths[2]:] == 0).all()
    assert encoder.tokenize([])["input_ids"].shape == (0, 0)


def test_the_given_length_truncates_where_the_exports_own_does_not(export: Path, encoder: OnnxEncoder) -> None:
    short = OnnxEncoder(export, max_seq_length=8)
    assert encoder.max_seq_length == 512 and short.max_seq_length == 8  # 512: the export's config
    assert short.tokenize(TEXTS)["input_ids"].shape == (3, 8)
    vectors = short.encode(TEXTS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vectors[1], encoder.encode(TEXTS)[1], atol=1e-3)  # the cut text is another text


def test_a_text_gets_the_same_vector_in_any_batch_size(encoder: OnnxEncoder) -> None:
    """Batches are cut longest first; each row still belongs to the text at its place (int8 moves it a little)."""
    one = encoder.encode(TEXTS, batch_size=1)
    assert one.shape == (3, EMBEDDING_DIM) and one.dtype == np.float32
    assert np.abs(encoder.encode(TEXTS, batch_size=2) - one).max() < 0.02
    assert np.abs(encoder.encode(TEXTS[::-1], batch_size=1)[::-1] - one).max() < 1e-6


@pytest.mark.parametrize("batch_size", [0, -1])
def test_a_batch_size_below_one_is_refused(encoder: OnnxEncoder, batch_size: int) -> None:
    with pytest.raises(ValueError, match=rf"^batch_size must be >= 1, got {batch_size}$"):
        encoder.encode(TEXTS, batch_size=batch_size)


def test_a_length_below_two_is_refused(export: Path) -> None:
    """``<s>`` and ``</s>`` alone take two tokens."""
    with pytest.raises(ValueError, match=r"^max_seq_length must be >= 2, got 1$"):
        OnnxEncoder(export, max_seq_length=1)


def test_a_length_of_zero_is_refused_not_replaced_by_the_exports(export: Path) -> None:
    with pytest.raises(ValueError, match=r"^max_seq_length must be >= 2, got 0$"):
        OnnxEncoder(export, max_seq_length=0)


def test_a_missing_model_file_names_the_command_that_builds_it(export: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"model_fp16\.onnx does not exist; build it with `python -m pipel"):
        OnnxEncoder(export, file_name="model_fp16.onnx")


@pytest.mark.parametrize("config", [None, "{not json", '{"max_seq_length": 5'])
def test_a_missing_or_broken_module_config_is_a_clear_error(export: Path, tmp_path: Path, config: str | None) -> None:
    folder = copy_of(export, tmp_path / "onnx", config)
    path = re.escape(str(folder / MODULE_CONFIG))
    with pytest.raises(ValueError, match=rf"^{path} is missing or unreadable \(\w+\); rebuild the export with "):
        OnnxEncoder(folder)


def test_an_export_whose_config_sets_a_length_uses_it(export: Path, tmp_path: Path) -> None:
    folder = copy_of(export, tmp_path / "onnx", json.dumps({"max_seq_length": 16}))
    assert OnnxEncoder(folder).tokenize(TEXTS)["input_ids"].shape == (3, 16)


@pytest.mark.parametrize(("arguments", "message"), [
    (("", None, 0), "model must name an ONNX export folder"),
    (("m", 1, 0), "max_seq_length must be >= 2, got 1"),
    (("m", None, -1), "intra_op_num_threads must be >= 0, got -1"),
])
def test_the_embedders_arguments_are_checked(arguments: tuple, message: str) -> None:
    with pytest.raises(ValueError) as error:
        check_encoder_arguments(*arguments)
    assert str(error.value) == message
    check_encoder_arguments("m", 2, 0)  # the smallest allowed values pass


def test_one_encoder_per_export_and_settings_whatever_the_paths_spelling(export: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(export.parent)
    assert shared_encoder("onnx") is shared_encoder(export) is shared_encoder(str(export) + os.sep)
    linked = tmp_path / "link"
    linked.symlink_to(export)
    assert shared_encoder(linked) is shared_encoder(export)  # resolved: the same files, one session
    assert shared_encoder(export, max_seq_length=64) is not shared_encoder(export)


def test_a_component_using_the_shared_encoder_loads_it_once_on_first_use(export: Path) -> None:
    class Embedder(UsesSharedEncoder):
        def __init__(self) -> None:
            self.model, self.file_name, self.max_seq_length = str(export), INT8_FILE, None
            self.intra_op_num_threads, self.allow_spinning = 0, False

    embedder = Embedder()
    assert embedder._encoder is None  # nothing loaded at construction
    assert embedder.encoder() is shared_encoder(export) is embedder._encoder
    embedder.warm_up()
    assert embedder.encoder() is shared_encoder(export)
