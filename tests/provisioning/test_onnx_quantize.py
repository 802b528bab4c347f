"""`provisioning.onnx_quantize`: the fusion and int8 steps of the ONNX export, on a two-layer feed-forward graph built
here (MatMul, bias, erf-GELU, MatMul) in place of the e5 encoder. The real export, and that these steps' children load
neither torch nor Haystack, are in tests/provisioning/test_onnx_export.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from provisioning.onnx_quantize import fuse, quantize_int8

WIDTH = 64
SETTINGS = {"per_channel": True, "reduce_range": False}  # what `onnx_export.quantization_config` gives, avx512_vnni


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """``tmp_path/model.onnx`` and the ``config.json`` the fusion reads the heads and the width from."""
    rng = np.random.default_rng(0)

    def constant(name: str, value: np.ndarray | float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)

    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["a"]),
             helper.make_node("Div", ["a", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["a", "e1"], ["g0"]),
             helper.make_node("Mul", ["g0", "half"], ["g"]), helper.make_node("MatMul", ["g", "w2"], ["y"])]
    shape = ["batch", "sequence", WIDTH]
    graph = helper.make_graph(
        nodes, "feed_forward", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [constant("w1", rng.normal(size=(WIDTH, WIDTH)) * 0.1), constant("b1", rng.normal(size=WIDTH) * 0.1),
         constant("sqrt2", 2 ** 0.5), constant("one", 1.0), constant("half", 0.5),
         constant("w2", rng.normal(size=(WIDTH, WIDTH)) * 0.1)])
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    made.ir_version = 8
    onnx.save(made, tmp_path / "model.onnx")
    (tmp_path / "config.json").write_text(json.dumps({"num_attention_heads": 2, "hidden_size": WIDTH}))
    return tmp_path / "model.onnx"


def run(path: Path, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def inputs() -> np.ndarray:
    return np.random.default_rng(1).normal(size=(2, 3, WIDTH)).astype(np.float32)


def test_fusion_reports_only_the_operators_it_fused_and_keeps_the_output(model: Path) -> None:
    fused = model.parent / "fused.onnx"
    assert fuse(model.parent, model, fused) == {"BiasGelu": 1}  # the bias add and the erf GELU as one operator
    assert [node.op_type for node in onnx.load(fused).graph.node] == ["MatMul", "BiasGelu", "MatMul"]
    assert np.allclose(run(fused, inputs()), run(model, inputs()), atol=1e-5)


def test_fusion_needs_the_models_config(model: Path) -> None:
    (model.parent / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="config.json"):
        fuse(model.parent, model, model.parent / "fused.onnx")


def test_int8_quantisation_shrinks_the_weights_and_stays_close(model: Path) -> None:
    int8 = model.parent / "int8.onnx"
    quantize_int8(model, int8, SETTINGS)
    operators = {node.op_type for node in onnx.load(int8).graph.node}
    assert "MatMulInteger" in operators and "MatMul" not in operators
    assert int8.stat().st_size < model.stat().st_size / 2
    exact, quantised = run(model, inputs()).ravel(), run(int8, inputs()).ravel()
    assert exact @ quantised / np.linalg.norm(exact) / np.linalg.norm(quantised) > 0.99


def test_int8_quantisation_drops_onnxruntimes_pre_processing_advice(model: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    caplog.set_level(logging.WARNING)
    quantize_dynamic(str(model), str(model.parent / "plain.onnx"), weight_type=QuantType.QInt8)
    assert "pre-processing before quantization" in caplog.text  # what onnxruntime logs on its own
    caplog.clear()
    quantize_int8(model, model.parent / "int8.onnx", SETTINGS)
    assert "pre-processing before quantization" not in caplog.text
    assert not any(isinstance(f, logging.Filter) and "Advice" in type(f).__name__ for f in logging.getLogger().filters)
