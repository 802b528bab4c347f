"""Query-time ONNX encoding: the sentence-transformers input module that runs an int8 e5 export with ONNX Runtime.

The export itself (``torch.onnx.export``, fusion, quantisation, checks) is a build step in
`provisioning.onnx_export`; this module is all that loading and encoding need, so the product never imports the
build tools. ``modules.json`` of an export names `OnnxTransformer` by `MODULE_TYPE`.

Usage::

    from sentence_transformers import SentenceTransformer
    from helpers.text_encoding.onnx_encoder import INT8_FILE, onnx_dir
    model = SentenceTransformer(str(onnx_dir(folder)), trust_remote_code=True, local_files_only=True,
                                device="cpu", model_kwargs={"file_name": INT8_FILE})
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from helpers.text_encoding.onnx_encoder import FP32_FILE, MAX_SEQ_LENGTH, MODULE_CONFIG, OnnxEncoder

MODULE_TYPE = f"{__name__}.OnnxTransformer"


# --------------------------------------------------------------------------- sentence-transformers module


def _make_module_class() -> type:
    import torch
    from sentence_transformers.base.modules.input_module import InputModule

    class OnnxTransformer(InputModule):
        """A sentence-transformers input module that tokenises and runs an ONNX encoder with ONNX Runtime.

        It plays the part of ``sentence_transformers.models.Transformer``: its output features are
        ``token_embeddings`` and ``attention_mask``, which the following ``Pooling``/``Normalize``
        modules consume.  Inference only (``save`` is not supported).

        :param model_path: the folder holding the ONNX files (and this module's config).
        :param file_name: the ONNX file to run, relative to ``model_path``.
        :param max_seq_length: truncation length in tokens.
        :param intra_op_num_threads: ONNX Runtime threads (0 = its default, one per physical core).
        """

        config_keys: ClassVar[list[str]] = ["file_name", "max_seq_length"]
        config_file_name = MODULE_CONFIG

        def __init__(
            self,
            model_path: str,
            file_name: str = FP32_FILE,
            max_seq_length: int = MAX_SEQ_LENGTH,
            intra_op_num_threads: int = 0,
        ) -> None:
            super().__init__()
            self.model_path = str(model_path)
            self.file_name = file_name
            self.max_seq_length = int(max_seq_length)
            self.encoder = OnnxEncoder(model_path, file_name, self.max_seq_length, intra_op_num_threads)

        @classmethod
        def load(
            cls,
            model_name_or_path: str,
            subfolder: str = "",
            model_kwargs: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> OnnxTransformer:
            """Load from a local folder; ``model_kwargs`` may override ``file_name`` and set
            ``intra_op_num_threads`` (other keys, e.g. ``provider``, are ignored)."""
            path = Path(model_name_or_path) / subfolder
            config = json.loads((path / MODULE_CONFIG).read_text(encoding="utf-8"))
            extra = dict(model_kwargs or {})
            if extra.get("file_name"):
                config["file_name"] = extra["file_name"]
            if "intra_op_num_threads" in extra:
                config["intra_op_num_threads"] = extra["intra_op_num_threads"]
            return cls(str(path), **config)

        def preprocess(self, inputs: Sequence[Any], prompt: str | None = None, **kwargs: Any) -> dict[str, Any]:
            texts = [(prompt or "") + str(x) for x in inputs]
            return {name: torch.from_numpy(array) for name, array in self.encoder.tokenize(texts).items()}

        def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            arrays = {name: features[name].detach().cpu().numpy() for name in ("input_ids", "attention_mask")}
            features["token_embeddings"] = torch.from_numpy(self.encoder.token_embeddings(arrays))
            return features

        def get_embedding_dimension(self) -> int:
            return self.encoder.dimension

        def get_word_embedding_dimension(self) -> int:
            return self.get_embedding_dimension()

        def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("OnnxTransformer is inference-only; rebuild with build_onnx_int8")

    OnnxTransformer.__module__ = __name__
    OnnxTransformer.__qualname__ = "OnnxTransformer"
    return OnnxTransformer


def __getattr__(name: str) -> Any:
    # ``OnnxTransformer`` is created on first access so importing this module stays cheap.
    if name == "OnnxTransformer":
        cls = _make_module_class()
        globals()["OnnxTransformer"] = cls
        return cls
    raise AttributeError(name)
