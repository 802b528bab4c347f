"""`helpers.text_encoding.sentencepiece_tokenizer.SentencePieceTokenizer` on the suite's e5 export: the edges of
`encode_batch` and of its config (its ids against `tokenizers` on the corpus and random text are in
provisioning/test_sentencepiece_convert.py)."""

import json
import re
from pathlib import Path

import pytest

from helpers.text_encoding.onnx_encoder import onnx_dir
from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE, MODEL_FILE, SentencePieceTokenizer

MASK = "<mask>"


@pytest.fixture(scope="module")
def export(e5_model: Path) -> Path:
    return onnx_dir(e5_model)


@pytest.fixture(scope="module")
def tokenizer(export: Path) -> SentencePieceTokenizer:
    return SentencePieceTokenizer(export)


def config(export: Path) -> dict:
    return json.loads((export / CONFIG_FILE).read_text(encoding="utf-8"))


def copy_with(export: Path, folder: Path, text: str) -> Path:
    folder.mkdir()
    (folder / MODEL_FILE).symlink_to(export / MODEL_FILE)
    (folder / CONFIG_FILE).write_text(text, encoding="utf-8")
    return folder


def test_an_empty_batch_and_an_empty_text(tokenizer: SentencePieceTokenizer) -> None:
    assert tokenizer.encode_batch([], 512) == []
    assert tokenizer.encode_batch(["", "同意"], 512)[0] == [tokenizer.bos_id, tokenizer.eos_id]


def test_texts_keep_their_order_and_do_not_depend_on_their_batch(tokenizer: SentencePieceTokenizer) -> None:
    texts = ["query: 同意", "passage: 处理个人信息应当取得个人同意", "x"]
    batch = tokenizer.encode_batch(texts, 512)
    assert batch == [tokenizer.encode_batch([text], 512)[0] for text in texts]
    assert tokenizer.encode_batch(texts[::-1], 512) == batch[::-1]


def test_a_value_that_is_not_a_string_is_encoded_as_its_text(tokenizer: SentencePieceTokenizer) -> None:
    assert tokenizer.encode_batch([12, 3.5], 512) == tokenizer.encode_batch(["12", "3.5"], 512)  # type: ignore[list-item]


def test_the_shortest_length_keeps_only_the_wrapping(tokenizer: SentencePieceTokenizer) -> None:
    assert tokenizer.encode_batch(["处理个人信息应当取得个人同意"], 2) == [[tokenizer.bos_id, tokenizer.eos_id]]
    three = tokenizer.encode_batch(["处理个人信息应当取得个人同意"], 3)[0]
    assert len(three) == 3 and three[1] == tokenizer.encode_batch(["处理个人信息应当取得个人同意"], 512)[0][1]


def test_special_token_strings_become_their_ids(tokenizer: SentencePieceTokenizer, export: Path) -> None:
    special = config(export)["special_tokens"]
    assert tokenizer.encode_batch([MASK], 512) == [[tokenizer.bos_id, special[MASK], tokenizer.eos_id]]
    # <mask> takes the spaces before it (``lstrip``): "a <mask>" is "a<mask>"
    assert tokenizer.encode_batch(["a <mask>"], 512) == tokenizer.encode_batch(["a<mask>"], 512)
    assert tokenizer.encode_batch(["<s>x</s>"], 512)[0][1] == special["<s>"]


def test_a_config_without_special_tokens_reads_their_strings_as_text(export: Path, tmp_path: Path) -> None:
    plain = copy_with(export, tmp_path / "plain", json.dumps({**config(export), "special_tokens": {}, "lstrip": []}))
    ids = SentencePieceTokenizer(plain).encode_batch([MASK], 512)[0]
    assert config(export)["special_tokens"][MASK] not in ids and len(ids) > 3  # "<", "mask", ">" as pieces


@pytest.mark.parametrize("text", ["not json", '{"bos_id": "x", "eos_id": 2, "pad_id": 1}', "[]"])
def test_a_broken_config_is_a_clear_error(export: Path, tmp_path: Path, text: str) -> None:
    broken = copy_with(export, tmp_path / "broken", text)
    path = re.escape(str(broken / CONFIG_FILE))
    with pytest.raises(ValueError, match=rf"^{path} is unreadable .*`python -m pipelines setup`$"):
        SentencePieceTokenizer(broken)


def test_a_missing_model_file_is_named(export: Path, tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).write_text(json.dumps(config(export)), encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=rf"^{re.escape(str(tmp_path / MODEL_FILE))} does not exist"):
        SentencePieceTokenizer(tmp_path)
