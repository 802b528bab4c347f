"""OnnxEncoder: a sentence-transformers e5 export run by ONNX Runtime and SentencePiece alone.

It computes what ``SentenceTransformer(export).encode(texts, normalize_embeddings=True)`` computes (tokenise as
the model's own ``tokenizer.json`` does, run the encoder, mean-pool over the attention mask, L2-normalise) without
importing torch, transformers or sentence-transformers, which together hold about 450 MiB of a serving process.
The export folder is the one ``python -m pipelines setup`` builds (`provisioning.onnx_export`): ``model.onnx`` /
``model_qint8.onnx``, the module config with the truncation length, the tokenizer converted for SentencePiece
(`helpers.text_encoding.sentencepiece_tokenizer`: 55 MiB where `tokenizers` holds 282) and sentence-transformers'
``1_Pooling`` config (only mean pooling is supported; anything else is refused).

Usage::

    from helpers.text_encoding.onnx_encoder import INT8_FILE, OnnxEncoder
    encoder = OnnxEncoder("models/multilingual-e5-small/onnx", file_name=INT8_FILE)
    vectors = encoder.encode(["query: 公司收集个人信息需要同意吗"])   # float32, shape (1, 384), unit length
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from helpers.text_encoding.sentencepiece_tokenizer import SentencePieceTokenizer

ONNX_DIR = "onnx"
FP32_FILE = "model.onnx"
INT8_FILE = "model_qint8.onnx"
MODULE_CONFIG = "onnx_transformer_config.json"
POOLING_CONFIG = Path("1_Pooling") / "config.json"
MAX_SEQ_LENGTH = 512
EMBEDDING_DIM = 384  # multilingual-e5-small
# Texts per encoder call. Smaller batches run faster on CPU (the activations stay in cache): 1,500 random articles
# sorted by length, int8 on 2 AMX cores, took 15.9 / 14.4 / 13.9 / 13.8 / 18.5 s at batch 1 / 2 / 4 / 8 / 32
# (fp32 torch, 600 articles: 9.6 s at 8 against 12.1–13.7 s at 32). benchmarks/reports/indexing_edge.md
BATCH_SIZE = 8


def onnx_dir(folder: Path | str) -> Path:
    """The ``onnx`` export folder inside an e5 ``folder``."""
    return Path(folder) / ONNX_DIR


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is missing or unreadable ({error.__class__.__name__}); rebuild the export with "
                         "`python -m pipelines setup`") from error


def mean_pooling(config: dict) -> bool:
    """Whether a sentence-transformers ``1_Pooling/config.json`` asks for mean pooling alone: ``pooling_mode``
    ``"mean"`` (sentence-transformers 6 writes it so) or, in older folders, ``pooling_mode_mean_tokens`` as the only
    ``pooling_mode_*`` flag set."""
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        return mode == "mean" or mode == ["mean"]
    flags = {key for key, value in config.items() if key.startswith("pooling_mode_") and value}
    return flags == {"pooling_mode_mean_tokens"}


class OnnxEncoder:
    """Tokenises, encodes, mean-pools and normalises texts with an ONNX e5 export.

    :param folder: the export folder (holding ``file_name`` and ``onnx_transformer_config.json``).
    :param file_name: the ONNX file to run, relative to ``folder``.
    :param max_seq_length: truncation length in tokens (``None`` = the export's own, 512 for e5).
    :param intra_op_num_threads: ONNX Runtime threads (0 = its default, one per physical core).
    :param allow_spinning: whether idle ONNX Runtime threads spin before they sleep. Spinning speeds bulk encoding
        (1,500 articles at batch 8: 12.9 s with it, 13.9 s without) but holds the cores that concurrent requests'
        searches need (hybrid retrieval from 4 threads on 2 cores: 96 queries/s without it, 75 with it), so the
        document embedder spins by default and the query embedder does not.
    """

    def __init__(self, folder: Path | str, file_name: str = INT8_FILE, max_seq_length: int | None = None,
                 intra_op_num_threads: int = 0, allow_spinning: bool = False) -> None:
        import onnxruntime as ort

        folder = Path(folder)
        model_file = folder / file_name
        if not model_file.is_file():
            raise FileNotFoundError(f"ONNX model file {model_file} does not exist; build it with "
                                    "`python -m pipelines setup`")
        config = _json(folder / MODULE_CONFIG)
        pooling = _json(folder / POOLING_CONFIG)
        if not mean_pooling(pooling):
            raise ValueError(f"{folder / POOLING_CONFIG}: only mean pooling is supported, got {pooling}")
        given = config.get("max_seq_length", MAX_SEQ_LENGTH) if max_seq_length is None else max_seq_length
        self.max_seq_length = int(given)
        if self.max_seq_length < 2:
            raise ValueError(f"max_seq_length must be >= 2, got {self.max_seq_length}")
        self.tokenizer = SentencePieceTokenizer(folder)
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(intra_op_num_threads)
        self.allow_spinning = allow_spinning
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if allow_spinning else "0")
        self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def tokenize(self, texts: list[str]) -> dict[str, np.ndarray]:
        """``input_ids`` and ``attention_mask`` (int64, padded to the longest text, truncated)."""
        ids = self.tokenizer.encode_batch(texts, self.max_seq_length)
        width = max((len(row) for row in ids), default=0)
        input_ids = np.full((len(ids), width), self.tokenizer.pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, :len(row)] = row
            attention_mask[i, :len(row)] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def token_embeddings(self, features: dict[str, np.ndarray]) -> np.ndarray:
        """The encoder's last hidden state for tokenised input."""
        (hidden,) = self.session.run(["last_hidden_state"], {k: v for k, v in features.items() if k in self._inputs})
        return hidden

    def encode(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Unit-length embeddings, one row per text, in the order given. Texts are batched longest first (as
        sentence-transformers does) so that a batch pads little."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), batch_size):
            chosen = order[start:start + batch_size]
            features = self.tokenize([texts[i] for i in chosen])
            mask = features["attention_mask"][..., None].astype(np.float32)
            pooled = (self.token_embeddings(features) * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            out[chosen] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def check_encoder_arguments(model: str, max_seq_length: int | None, intra_op_num_threads: int) -> None:
    """The embedders' init validation of what they pass to `shared_encoder` (clear `ValueError`s)."""
    if not model:
        raise ValueError("model must name an ONNX export folder")
    if max_seq_length is not None and max_seq_length < 2:
        raise ValueError(f"max_seq_length must be >= 2, got {max_seq_length}")
    if intra_op_num_threads < 0:
        raise ValueError(f"intra_op_num_threads must be >= 0, got {intra_op_num_threads}")


def shared_encoder(folder: Path | str, file_name: str = INT8_FILE, max_seq_length: int | None = None,
                   intra_op_num_threads: int = 0, allow_spinning: bool = False) -> OnnxEncoder:
    """One encoder per export and settings in a process, shared by every embedder that asks for it (as Haystack's
    sentence-transformers embedders share their backend), so a server with several pipelines loads it once."""
    return _shared(str(Path(folder).resolve()), file_name, max_seq_length, intra_op_num_threads, allow_spinning)


@lru_cache(maxsize=4)
def _shared(folder: str, file_name: str, max_seq_length: int | None, intra_op_num_threads: int,
            allow_spinning: bool) -> OnnxEncoder:
    return OnnxEncoder(folder, file_name, max_seq_length, intra_op_num_threads, allow_spinning)


class UsesSharedEncoder:
    """What the ONNX embedders have in common: their encoder settings and the shared encoder, loaded at warm-up."""

    model: str
    file_name: str
    max_seq_length: int | None
    intra_op_num_threads: int
    allow_spinning: bool
    _encoder: OnnxEncoder | None = None

    def warm_up(self) -> None:
        if self._encoder is None:
            self._encoder = shared_encoder(self.model, self.file_name, self.max_seq_length, self.intra_op_num_threads,
                                           self.allow_spinning)

    def encoder(self) -> OnnxEncoder:
        """The shared encoder (warmed up on first use)."""
        self.warm_up()
        assert self._encoder is not None
        return self._encoder
