"""OnnxDocumentEmbedder: embeds Documents with the int8 ONNX export of the e5 model, without torch.

The interface of Haystack's ``SentenceTransformersDocumentEmbedder`` (``run(documents) -> {"documents": ...}``;
the text embedded is ``prefix + separator.join(meta values…, content) + suffix``) and the same vectors as that
embedder loading the export through sentence-transformers. The encoder (`helpers.text_encoding.onnx_encoder`) is
loaded at warm-up and shared with the process's `OnnxTextEmbedder`.

Usage::

    from haystack import Document
    from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
    embedder = OnnxDocumentEmbedder(model="models/multilingual-e5-small/onnx", prefix="passage: ",
                                    meta_fields_to_embed=["law"])
    embedder.warm_up()
    docs = embedder.run(documents=[Document(content="处理个人信息应当取得个人同意", meta={"law": "个人信息保护法"})])
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component

from helpers.text_encoding.onnx_encoder import BATCH_SIZE, INT8_FILE, UsesSharedEncoder, check_encoder_arguments


@component
class OnnxDocumentEmbedder(UsesSharedEncoder):
    """Sets ``embedding`` on each Document (mean-pooled, unit length).

    :param model: the ONNX export folder of an e5 model (``<model>/onnx``, built by ``python -m pipelines setup``).
    :param file_name: the ONNX file in it (the int8 export by default).
    :param prefix: text put before each document (e5: ``"passage: "``).
    :param suffix: text put after it.
    :param meta_fields_to_embed: meta fields whose values go before the content, in this order.
    :param embedding_separator: what joins the meta values and the content.
    :param batch_size: texts per encoder call (batched longest first).
    :param max_seq_length: truncation length in tokens (``None`` = the export's own).
    :param intra_op_num_threads: ONNX Runtime threads (0 = one per physical core).
    :param allow_spinning: idle ONNX Runtime threads spin before they sleep (faster bulk encoding; turn it off where
        the process also serves queries on the same cores, see `OnnxEncoder`).
    """

    def __init__(self, model: str, file_name: str = INT8_FILE, prefix: str = "", suffix: str = "",
                 meta_fields_to_embed: list[str] | None = None, embedding_separator: str = "\n",
                 batch_size: int = BATCH_SIZE, max_seq_length: int | None = None, intra_op_num_threads: int = 0,
                 allow_spinning: bool = True) -> None:
        check_encoder_arguments(model, max_seq_length, intra_op_num_threads)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.file_name = file_name
        self.prefix = prefix
        self.suffix = suffix
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.intra_op_num_threads = intra_op_num_threads
        self.allow_spinning = allow_spinning
        self._encoder = None

    def text_to_embed(self, document: Document) -> str:
        values = [str(document.meta[k]) for k in self.meta_fields_to_embed if document.meta.get(k) is not None]
        return self.prefix + self.embedding_separator.join([*values, document.content or ""]) + self.suffix

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            raise TypeError("OnnxDocumentEmbedder expects a list of Documents; embed a string with OnnxTextEmbedder")
        vectors = self.encoder().encode([self.text_to_embed(d) for d in documents], self.batch_size)
        return {"documents": [replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors, strict=True)]}
