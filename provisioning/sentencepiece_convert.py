"""Convert an e5 (XLM-R unigram) ``tokenizer.json`` into what `helpers.text_encoding.sentencepiece_tokenizer` loads.

``write_sentencepiece(tokenizer_json, folder)`` writes ``folder/sentencepiece.model`` (the unigram pieces and
scores, with SentencePiece's own normalisation, dummy prefix and whitespace handling switched off: the tokenizer
does those steps as `tokenizers` does) and ``folder/sentencepiece.json`` (the normaliser, the special tokens).
Only the layout of multilingual-e5's ``tokenizer.json`` is accepted (a unigram model without byte fallback,
``Metaspace(prepend_scheme="always", split=True)``, ``<s> A </s>`` post-processing); anything else is refused
with a ``ValueError``. ``check_same_ids`` compares the result with `tokenizers` on given texts.

Usage::

    from provisioning.sentencepiece_convert import check_same_ids, write_sentencepiece
    write_sentencepiece(Path("models/multilingual-e5-small/tokenizer.json"), Path("models/multilingual-e5-small/onnx"))
    check_same_ids(Path("models/multilingual-e5-small/tokenizer.json"), Path("models/multilingual-e5-small/onnx"),
                   ["query: 公司收集个人信息需要同意吗"])
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.text_encoding.onnx_encoder import MAX_SEQ_LENGTH
from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE, METASPACE, MODEL_FILE, SentencePieceTokenizer

BOS, PAD, EOS, UNK = "<s>", "<pad>", "</s>", "<unk>"
# what the export checks besides its ranking sentences: full-width forms and NFKC, control characters, runs of
# spaces, a trailing space, special-token strings inside a text, characters outside the vocabulary
CHECK_TEXTS = [
    "query: 《中华人民共和国民法典》第一千零三十五条　处理个人信息的，应当遵循合法、正当、必要原则",
    "passage: ＡＢＣ　ｆｕｌｌ－ｗｉｄｔｈ　１２３ ～ ① ㈱ ﬁ ℃ ㎡ é",
    "query: tab\there\nnew line\x01 control\u200b zero-width  two   spaces ",
    "query: <s>inside</s> and <mask> and<mask><unk><pad>",
    "query: \U0002a6a5\U00016d21 unknown ▁ 😀👍🏽",
    "",
]


def _refuse(path: Path, what: str) -> ValueError:
    return ValueError(f"{path}: {what}; only an XLM-R unigram tokenizer.json (as multilingual-e5's) converts")


def _check_layout(path: Path, spec: dict[str, Any]) -> None:
    model = spec.get("model") or {}
    if model.get("type") != "Unigram" or model.get("byte_fallback"):
        raise _refuse(path, f"the model is {model.get('type')!r} (byte_fallback={model.get('byte_fallback')})")
    pre = spec.get("pre_tokenizer") or {}
    if (pre.get("type"), pre.get("replacement"), pre.get("prepend_scheme"), pre.get("split")) != (
            "Metaspace", METASPACE, "always", True):
        raise _refuse(path, f"the pre-tokenizer is {json.dumps(pre)[:200]}")
    single = (spec.get("post_processor") or {}).get("single") or []
    shape = [next(iter(step.values())).get("id") for step in single]
    if shape != [BOS, "A", EOS]:
        raise _refuse(path, f"post-processing is {shape}, not ['<s>', 'A', '</s>']")


def write_sentencepiece(tokenizer_json: Path, folder: Path) -> None:
    """Write ``sentencepiece.model`` and ``sentencepiece.json`` for ``tokenizer_json`` into ``folder``.

    :raises ValueError: if ``tokenizer_json`` is unreadable or not an XLM-R unigram tokenizer.
    """
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    try:
        spec = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{tokenizer_json} is unreadable ({error})") from error
    _check_layout(tokenizer_json, spec)
    vocab: list[list[Any]] = spec["model"]["vocab"]
    ids = {piece: i for i, (piece, _score) in enumerate(vocab)}
    if any(token not in ids for token in (BOS, PAD, EOS, UNK)) or ids[UNK] != spec["model"].get("unk_id"):
        raise _refuse(tokenizer_json, "<s>, <pad>, </s> or <unk> is missing or unk_id disagrees")
    added = {token["content"]: token for token in spec.get("added_tokens", []) if token.get("special")}
    if any(ids.get(content) != token["id"] for content, token in added.items()):
        raise _refuse(tokenizer_json, "a special token's id is not its place in the vocabulary")

    proto = model_pb2.ModelProto()
    kind = model_pb2.ModelProto.SentencePiece.Type
    for piece, score in vocab:
        entry = proto.pieces.add()
        entry.piece, entry.score = piece, float(score)
        # special tokens never come out of segmentation: the tokenizer splits them off first, as `tokenizers` does
        entry.type = kind.UNKNOWN if piece == UNK else kind.CONTROL if piece in added else kind.NORMAL
    trainer = proto.trainer_spec
    trainer.model_type = model_pb2.TrainerSpec.UNIGRAM
    trainer.vocab_size = len(vocab)
    trainer.unk_id, trainer.bos_id, trainer.eos_id, trainer.pad_id = ids[UNK], ids[BOS], ids[EOS], ids[PAD]
    normalizer = proto.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = normalizer.remove_extra_whitespaces = normalizer.escape_whitespaces = False
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MODEL_FILE).write_bytes(proto.SerializeToString())
    config = {"bos_id": ids[BOS], "eos_id": ids[EOS], "pad_id": ids[PAD],
              "special_tokens": {content: token["id"] for content, token in added.items()},
              "lstrip": sorted(content for content, token in added.items() if token.get("lstrip")),
              "normalizer": spec.get("normalizer")}
    (folder / CONFIG_FILE).write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")


def check_same_ids(tokenizer_json: Path, folder: Path, texts: list[str]) -> None:
    """Raise ``RuntimeError`` naming the first of ``texts`` whose ids from ``folder``'s SentencePiece files differ
    from `tokenizers`' ids for ``tokenizer_json`` (both truncated to 512)."""
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(tokenizer_json))
    reference.no_padding()  # a tokenizer.json that a trainer saved may pad
    reference.enable_truncation(MAX_SEQ_LENGTH)
    expected = [encoding.ids for encoding in reference.encode_batch(texts)]
    got = SentencePieceTokenizer(folder).encode_batch(texts, MAX_SEQ_LENGTH)
    for text, want, have in zip(texts, expected, got, strict=True):
        if want != have:
            raise RuntimeError(f"{folder / MODEL_FILE} tokenises {text[:60]!r} as {have[:20]}…, "
                               f"tokenizers as {want[:20]}…")
