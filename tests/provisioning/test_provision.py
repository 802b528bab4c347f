"""`provisioning.provision`: what a cold set-up says while it builds the offline models (issue 50)."""

from pathlib import Path

import pytest

import provisioning.provision as provision_module
from config.settings import Settings
from provisioning.provision import provision


@pytest.fixture
def cold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, list[str]]:
    """Settings over an empty models folder, with the three builds recording that they ran (and building
    nothing), and the list they record into."""
    for name in ("DEEPSEEK_API_KEY", "LLM_BASE_URL", "EMBEDDING_MODEL", "LLM_GGUF", "ADAPTED_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MODELS_DIR", str(tmp_path / "models"))
    events: list[str] = []
    monkeypatch.setattr(provision_module, "build_e5_folder", lambda folder: events.append("build e5-small"))
    monkeypatch.setattr(provision_module, "assemble_gguf", lambda path: events.append("build GGUF"))
    monkeypatch.setattr(provision_module, "build_onnx_int8", lambda folder: events.append("build int8 export"))
    return Settings.from_env(), events


def test_each_model_is_reported_when_it_is_ready_and_each_long_build_when_it_starts(cold):
    """A server shows `prepare`'s latest line in `/status` while it prepares: before, every line came after the
    last build (about a minute of "starting" on a cold machine)."""
    settings, events = cold
    for line in provision(settings, train=False):
        events.append(line.split(" ", 1)[0])
    assert events == ["rebuilding", "build e5-small", "embedding",
                      "build GGUF", "LLM",
                      "exporting", "build int8 export", "int8"]


def test_a_built_model_is_not_announced_as_being_built(cold, monkeypatch):
    settings, _ = cold
    monkeypatch.setattr(provision_module, "e5_folder_complete", lambda folder: True)
    monkeypatch.setattr(provision_module, "onnx_export_complete", lambda folder: True)
    lines = list(provision(settings, train=False))
    assert [line.split(" ", 1)[0] for line in lines] == ["embedding", "LLM", "int8"]
