"""OnnxTextEmbedder: embeds a query with the int8 ONNX export of the e5 model, without torch.

The query-side twin of `OnnxDocumentEmbedder`, with the interface of Haystack's
``SentenceTransformersTextEmbedder`` (``run(text) -> {"embedding": list[float]}``, ``prefix``/``suffix``), and the
same vectors as that embedder loading the export through sentence-transformers (checked to 1e-6 in the tests).
The encoder (`helpers.text_encoding.onnx_encoder`) is loaded at warm-up and shared by the embedders of one process.

Usage::

    from components.embedders.onnx_text_embedder import OnnxTextEmbedder
    embedder = OnnxTextEmbedder(model="models/multilingual-e5-small/onnx", prefix="query: ")
    embedder.warm_up()
    vector = embedder.run(text="公司收集个人信息需要同意吗")["embedding"]
"""

from __future__ import annotations

from typing import Any

from haystack import component

from helpers.text_encoding.onnx_encoder import INT8_FILE, UsesSharedEncoder, check_encoder_arguments


@component
class OnnxTextEmbedder(UsesSharedEncoder):
    """Embeds one string as ``prefix + text + suffix`` (mean-pooled, unit length).

    :param model: the ONNX export folder of an e5 model (``<model>/onnx``, built by ``python -m pipelines setup``).
    :param file_name: the ONNX file in it (the int8 export by default).
    :param prefix: text put before the query (e5: ``"query: "``).
    :param suffix: text put after it.
    :param max_seq_length: truncation length in tokens (``None`` = the export's own).
    :param intra_op_num_threads: ONNX Runtime threads (0 = one per physical core).
    :param allow_spinning: idle ONNX Runtime threads spin before they sleep (off: concurrent requests' searches get
        the cores, see `OnnxEncoder`).
    """

    def __init__(self, model: str, file_name: str = INT8_FILE, prefix: str = "", suffix: str = "",
                 max_seq_length: int | None = None, intra_op_num_threads: int = 0,
                 allow_spinning: bool = False) -> None:
        check_encoder_arguments(model, max_seq_length, intra_op_num_threads)
        self.model = model
        self.file_name = file_name
        self.prefix = prefix
        self.suffix = suffix
        self.max_seq_length = max_seq_length
        self.intra_op_num_threads = intra_op_num_threads
        self.allow_spinning = allow_spinning
        self._encoder = None

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError("OnnxTextEmbedder expects a string; embed Documents with OnnxDocumentEmbedder")
        return {"embedding": self.encoder().encode([self.prefix + text + self.suffix])[0].tolist()}
