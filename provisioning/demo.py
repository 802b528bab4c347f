"""``python -m pipelines demo`` (what ``make run`` does): the first answer first, the full stack after it. Steps
1–3 without the answer are what ``serve`` builds before it starts (`quick_stack`).

1. The offline models (e5-small, its int8 ONNX export, the GGUF), no training.
2. A judge for the first answer: the installed full evaluator if `setup` trained it already, else the quick
   evaluator (`provisioning.quick_start`: base e5-small over the laws most training questions cite, minutes).
3. Index the default laws and answer the question, then say what the answer used.
4. Train what is still missing of the full stack (adapted embedder, evaluator over the whole corpus), install it,
   and re-index the default laws with the adapted embedder. Ctrl-C there loses nothing: every model is staged and
   renamed into the cache only when complete, and the next ``make run`` resumes.
5. One line per phase with its seconds.

Usage::

    python -m pipelines demo ["你的问题"]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from config.settings import Settings
from interfaces.cli import Command
from provisioning.phases import Phases


def first_judge(settings: Settings, phases: Phases) -> str:
    """Make sure an informative evaluator is installed for the first answer; a line saying which one."""
    from pipelines.judges import evaluator_scope
    from provisioning.quick_start import train_quick_evaluator

    if not settings.trained_models:
        return "judge: the LLM (TRAINED_MODELS=off)"
    if evaluator_scope(settings) == "full":
        return f"judge: the full relevance evaluator ({settings.evaluator_model})"
    print("A quick relevance evaluator for the first answer (base e5-small, the laws most training questions cite; "
          "minutes); the full stack follows the answer.", flush=True)
    with phases.phase("quick evaluator"):
        result = train_quick_evaluator(settings, phases=phases)
    trained = result.trained
    return (f"judge: the quick relevance evaluator (base e5-small, {trained['questions']} training questions over "
            f"the laws they cite most; out-of-fold AUC {trained.get('oof_auc', float('nan')):.3f}); "
            "the full stack is trained after this answer")


def quick_stack(settings: Settings, parser: argparse.ArgumentParser, index: Command,
                phases: Phases) -> tuple[Settings, str]:
    """Steps 1–3 without the answer (what ``demo`` and ``serve`` need before a first answer; each step skips what is
    there): the settings to answer with, and a line saying which judge they use."""
    from provisioning.provision import provision

    for line in provision(settings, train=False, phases=phases):
        print(line)
    used = first_judge(settings, phases)
    current = dataclasses.replace(settings, embedding_model=Settings.from_env().embedding_model)
    with phases.phase("index the default laws"):
        index(parser.parse_args(["index", "--quiet"]), current)
    return current, used


def run_demo(query: str, settings: Settings, parser: argparse.ArgumentParser, index: Command, ask: Command) -> None:
    """The steps above; ``index`` and ``ask`` are the CLI's own commands, so the demo cannot drift from them."""
    from llm_access.embedded_server import stop_shared_server
    from provisioning.provision import trained_models

    phases = Phases()
    current, used = quick_stack(settings, parser, index, phases)
    print(f"\n问题：{query}\n")
    with phases.phase("answer"):
        ask(parser.parse_args(["ask", query, "--mode", "agentic"]), current)
    stop_shared_server()  # the embedded LLM's memory back before training
    print(f"\nThis answer used: embedder {Path(current.embedding_model).name}; {used}.")
    if settings.trained_models:
        print("Now the full stack (adapted embedder, evaluator over every article); skipped where cached. "
              "Ctrl-C is safe: the next `make run` resumes.", flush=True)
        print(trained_models(settings, phases))
        trained = Settings.from_env()
        if trained.embedding_model != current.embedding_model:
            with phases.phase("re-index the default laws with the adapted embedder"):
                index(parser.parse_args(["index", "--quiet"]), dataclasses.replace(
                    settings, embedding_model=trained.embedding_model))
        print("Ready: `make run`, `make serve` and `python -m pipelines ask` now use the full stack "
              f"(embedder {Path(trained.embedding_model).name}, evaluator {trained.evaluator_model}).")
    print("\n".join(phases.summary()))
