"""The e5 tokenizer converted for SentencePiece gives `tokenizers`' ids (provisioning.sentencepiece_convert,
helpers.text_encoding.sentencepiece_tokenizer)."""

import json
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers.text_encoding.onnx_encoder import MAX_SEQ_LENGTH, onnx_dir
from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE, MODEL_FILE, SentencePieceTokenizer
from pipelines.indexing import law_sources
from provisioning.sentencepiece_convert import check_same_ids, write_sentencepiece

TRICKY = list("abc XYZ 019 ，。！？、《》（）第条款法\t\n\r  　～①⑴ｆｕｌｌ\u200b\u00a0\u3000"
              "ﬁⅫ㈱¼éñßİ℃㎡Ω\x01\x7f\ufeff▁😀👍🏽\u0301--")


@pytest.fixture(scope="module")
def reference(e5_model: Path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(e5_model / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    return lambda texts: [e.ids for e in tokenizer.encode_batch(texts)]


@pytest.fixture(scope="module")
def converted(e5_model: Path) -> SentencePieceTokenizer:
    return SentencePieceTokenizer(onnx_dir(e5_model))  # the export the suite's setup built


def ties(a: list[int], b: list[int]) -> bool:
    """Whether ``b`` is ``a`` with some stretch split into the same pieces in another order."""
    return len(a) == len(b) and Counter(a) == Counter(b)


def test_ids_equal_tokenizers_on_every_statute_article(reference, converted):
    texts = [f"passage: {doc.meta.get('law_name', '')}\n{doc.content}"
             for s in law_sources(["all"]) for doc in s.documents]
    assert len(texts) > 20_000
    want, have = reference(texts), converted.encode_batch(texts, MAX_SEQ_LENGTH)
    differ = [i for i in range(len(texts)) if want[i] != have[i]]
    # the two Viterbi searches break ties between equal-score paths differently: a run of dashes in a table
    assert len(differ) <= 5 and all(ties(want[i], have[i]) for i in differ), [texts[i][:80] for i in differ]
    assert max(len(ids) for ids in have) == MAX_SEQ_LENGTH  # long articles are cut, <s> and </s> kept
    assert all(ids[0] == 0 and ids[-1] == 2 for ids in have)


def test_ids_equal_tokenizers_on_random_strings_and_special_tokens(reference, converted):
    rnd = random.Random(7)
    alphabet = TRICKY + ["<s>", "</s>", "<mask>", " <mask>", "<unk>", "<pad>", "<s"]
    alphabet += [chr(rnd.choice([rnd.randrange(0x20, 0xD7FF), rnd.randrange(0xE000, 0x2FFFF)])) for _ in range(500)]
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 50))) for _ in range(5000)]
    want, have = reference(texts), converted.encode_batch(texts, MAX_SEQ_LENGTH)
    assert [i for i in range(len(texts)) if want[i] != have[i] and not ties(want[i], have[i])] == []
    assert sum(want[i] == have[i] for i in range(len(texts))) >= 4990
    assert converted.encode_batch(["query: a<mask>b"], 8) == reference(["query: a<mask>b"])  # lstrip, special id


def test_truncation_and_bad_lengths(converted):
    long = converted.encode_batch(["法" * 100], 10)[0]
    assert len(long) == 10 and long[0] == converted.bos_id and long[-1] == converted.eos_id
    assert converted.encode_batch([""], 512) == [[converted.bos_id, converted.eos_id]]
    with pytest.raises(ValueError, match="max_length must be >= 2"):
        converted.encode_batch(["x"], 1)


def test_missing_or_broken_files_are_clear_errors(e5_model: Path, tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="pipelines setup"):
        SentencePieceTokenizer(tmp_path)
    shutil.copy(onnx_dir(e5_model) / MODEL_FILE, tmp_path / MODEL_FILE)
    (tmp_path / CONFIG_FILE).write_text('{"bos_id": 0}', encoding="utf-8")
    with pytest.raises(ValueError, match="unreadable"):
        SentencePieceTokenizer(tmp_path)


def test_a_tokenizer_of_another_kind_is_refused(e5_model: Path, tmp_path: Path):
    spec = json.loads((e5_model / "tokenizer.json").read_text(encoding="utf-8"))
    wordpiece = {**spec, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(wordpiece), encoding="utf-8")
    with pytest.raises(ValueError, match="only an XLM-R unigram"):
        write_sentencepiece(tmp_path / "tokenizer.json", tmp_path / "out")
    split_off = {**spec, "pre_tokenizer": {**spec["pre_tokenizer"], "split": False}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(split_off), encoding="utf-8")
    with pytest.raises(ValueError, match="pre-tokenizer"):
        write_sentencepiece(tmp_path / "tokenizer.json", tmp_path / "out")


def test_the_check_catches_a_conversion_that_tokenises_differently(e5_model: Path, tmp_path: Path):
    spec = json.loads((e5_model / "tokenizer.json").read_text(encoding="utf-8"))
    write_sentencepiece(e5_model / "tokenizer.json", tmp_path)
    check_same_ids(e5_model / "tokenizer.json", tmp_path, ["query: 个人信息"])
    index = next(i for i, (piece, _) in enumerate(spec["model"]["vocab"]) if piece == "个人信息")
    spec["model"]["vocab"][index][1] = -99.0  # the converted model no longer prefers the whole word
    (tmp_path / "changed.json").write_text(json.dumps(spec), encoding="utf-8")
    write_sentencepiece(tmp_path / "changed.json", tmp_path)
    with pytest.raises(RuntimeError, match="tokenises 'query: 个人信息'"):
        check_same_ids(e5_model / "tokenizer.json", tmp_path, ["query: 个人信息"])
