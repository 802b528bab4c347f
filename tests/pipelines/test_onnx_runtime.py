"""`pipelines.onnx_runtime.OnnxTransformer`: the sentence-transformers input module that an e5 export's
``modules.json`` names (the vectors sentence-transformers computes through it are in provisioning/test_onnx_export.py
and components/embedders/test_onnx_embedders.py)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.text_encoding.onnx_encoder import EMBEDDING_DIM, INT8_FILE, MODULE_CONFIG, POOLING_CONFIG, onnx_dir
from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE, MODEL_FILE

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def export(e5_model: Path) -> Path:
    return onnx_dir(e5_model)


@pytest.fixture(scope="module")
def module(export: Path):
    from pipelines.onnx_runtime import OnnxTransformer

    return OnnxTransformer.load(str(export))


def test_the_export_names_this_module_as_its_input_module(export: Path) -> None:
    from pipelines.onnx_runtime import MODULE_TYPE

    first = json.loads((export / "modules.json").read_text(encoding="utf-8"))[0]
    assert first["type"] == MODULE_TYPE == "pipelines.onnx_runtime.OnnxTransformer"


def test_importing_the_module_loads_neither_torch_nor_sentence_transformers() -> None:
    """The class is made on first access: a process that only imports this module stays small."""
    code = ("import sys, pipelines.onnx_runtime as m\n"
            "print(sorted(n for n in ('torch', 'sentence_transformers') if n in sys.modules))\n"
            "try:\n    m.NoSuchThing\nexcept AttributeError as e:\n    print('AttributeError', e)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.stdout.splitlines() == ["[]", "AttributeError NoSuchThing"], result.stderr


def test_model_kwargs_choose_the_file_and_the_threads_and_other_keys_are_ignored(export: Path,
                                                                                 tmp_path: Path) -> None:
    """A folder whose config names the fp32 file it does not hold loads the int8 file named in ``model_kwargs``."""
    from pipelines.onnx_runtime import OnnxTransformer

    for name in (INT8_FILE, MODEL_FILE, CONFIG_FILE):
        (tmp_path / name).symlink_to(export / name)
    shutil.copytree(export / POOLING_CONFIG.parent, tmp_path / POOLING_CONFIG.parent)
    (tmp_path / MODULE_CONFIG).write_text(json.dumps({"file_name": "model.onnx", "max_seq_length": 64}),
                                          encoding="utf-8")
    loaded = OnnxTransformer.load(str(tmp_path), model_kwargs={"file_name": INT8_FILE, "intra_op_num_threads": 1,
                                                               "provider": "CUDAExecutionProvider"})
    assert (loaded.file_name, loaded.max_seq_length) == (INT8_FILE, 64)
    assert loaded.encoder.session.get_session_options().intra_op_num_threads == 1
    with pytest.raises(FileNotFoundError, match=r"model\.onnx does not exist"):
        OnnxTransformer.load(str(tmp_path))  # without the override: the file its config names


def test_preprocess_puts_the_prompt_before_each_text(module) -> None:
    import torch

    features = module.preprocess(["公司收集个人信息需要同意吗", 12], prompt="query: ")
    expected = module.encoder.tokenize(["query: 公司收集个人信息需要同意吗", "query: 12"])
    assert set(features) == {"input_ids", "attention_mask"}
    assert all(features[name].dtype == torch.int64 for name in features)
    assert all(np.array_equal(features[name].numpy(), expected[name]) for name in expected)


def test_forward_adds_the_token_embeddings_the_pooling_reads(module) -> None:
    features = module.forward(module.preprocess(["处理个人信息应当取得个人同意", "x"]))
    embeddings = features["token_embeddings"]
    assert tuple(embeddings.shape) == (*features["input_ids"].shape, EMBEDDING_DIM)
    assert module.get_embedding_dimension() == module.get_word_embedding_dimension() == EMBEDDING_DIM


def test_it_cannot_be_saved(module, tmp_path: Path) -> None:
    with pytest.raises(NotImplementedError, match="inference-only; rebuild with build_onnx_int8"):
        module.save(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
