"""The fusion and int8 quantisation steps of the ONNX export (`provisioning.onnx_export`), in a module of their own.

Each step runs in a spawned child process, which imports the module that holds its function. `onnx_export` imports
Haystack and, through it, torch, and the fusion read the model's shape with transformers' `AutoConfig`; these steps
need only onnxruntime and onnx. On the first answer's path (`make run` and `make serve` alike), a cold export took
35.0 s instead of 45.8 s (fusion child 14.0 → 8.0 s, quantisation child 10.1 → 8.0 s; 2 cores).

Usage::

    stats = in_child(fuse, e5_folder, fp32_file, fused_file)
    in_child(quantize_int8, fused_file, int8_file, settings)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from provisioning.quiet import quiet_onnxruntime


def fuse(folder: Path, fp32: Path, fused_path: Path) -> dict[str, Any]:
    """Fuse the BERT graph (Attention, SkipLayerNorm, BiasGelu, EmbedLayerNorm) with the heads and width of
    ``folder``'s ``config.json``; the count of each fused operator."""
    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    fused = optimize_model(
        str(fp32),
        model_type="bert",
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
        opt_level=0,
        use_gpu=False,
    )
    fused.save_model_to_file(str(fused_path))
    return {k: v for k, v in fused.get_fused_operator_statistics().items() if v}


@quiet_onnxruntime()  # its quantisation advice, in this process too
def quantize_int8(fused_path: Path, dest: Path, settings: dict[str, Any]) -> None:
    """Dynamic int8 quantisation of the fused graph (``settings``: `onnx_export.quantization_config`)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fused_path),
        str(dest),
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        **settings,
    )
