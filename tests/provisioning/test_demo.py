"""`provisioning.demo`: which judge the first answer uses, and the order of the demo's steps. The building and the
training are stood in for here (they take minutes and are tested where they live: tests/provisioning/test_provision.py,
test_quick_start.py, test_train.py); the whole demo with real models is in tests/interfaces/test_cli.py."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import provisioning.provision as provision_module
import provisioning.quick_start as quick_start_module
from components.evaluators.relevance_evaluator import CALIBRATION_FILE, EVIDENCE_INPUTS, FEATURES
from config.settings import Settings
from interfaces.cli import Command, build_parser
from provisioning.demo import first_judge, quick_stack, run_demo
from provisioning.phases import Phases


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TRAINED_MODELS", "JUDGE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EVALUATOR_MODEL", str(tmp_path / "evaluator"))
    monkeypatch.setenv("EMBEDDING_MODEL", str(tmp_path / "models" / "multilingual-e5-small"))
    return tmp_path


def install_evaluator(folder: Path, scope: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CALIBRATION_FILE).write_text(json.dumps({
        "passage": {}, "evidence": {}, "threshold": 0.5, "features": list(FEATURES),
        "evidence_inputs": EVIDENCE_INPUTS, "scope": scope}), encoding="utf-8")


@pytest.fixture
def provisioned(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """`provision` stood in for: one line per model, and its keyword arguments recorded."""
    calls: list[dict[str, Any]] = []

    def provision(settings: Settings, **kwargs: Any) -> Iterator[str]:
        calls.append(kwargs)
        yield "e5-small ready"
        yield "LLM ready"

    monkeypatch.setattr(provision_module, "provision", provision)
    return calls


def recording(calls: list[tuple[argparse.Namespace, Settings]]) -> Command:
    def command(args: argparse.Namespace, settings: Settings) -> None:
        calls.append((args, settings))
        print(f"ran {args.command}")

    return command


def test_without_trained_models_the_llm_judges(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINED_MODELS", "off")
    phases = Phases()
    assert first_judge(Settings.from_env(), phases) == "judge: the LLM (TRAINED_MODELS=off)"
    assert phases.rows == []


def test_an_installed_full_evaluator_judges_the_first_answer(env: Path) -> None:
    install_evaluator(env / "evaluator", "full")
    phases = Phases()
    assert first_judge(Settings.from_env(), phases) == f"judge: the full relevance evaluator ({env / 'evaluator'})"
    assert phases.rows == []


@pytest.mark.parametrize(("trained", "auc"), [({"questions": 412, "oof_auc": 0.81234}, "0.812"),
                                              ({"questions": 50}, "nan")])
def test_otherwise_a_quick_evaluator_is_trained_first(env: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], trained: dict[str, Any],
                                                      auc: str) -> None:
    install_evaluator(env / "evaluator", "quick")  # a quick one from an earlier run: trained (or reused) again
    monkeypatch.setattr(quick_start_module, "train_quick_evaluator",
                        lambda settings, phases: SimpleNamespace(trained=trained))
    phases = Phases()
    line = first_judge(Settings.from_env(), phases)
    assert line == (f"judge: the quick relevance evaluator (base e5-small, {trained['questions']} training questions "
                    f"over the laws they cite most; out-of-fold AUC {auc}); the full stack is trained after this "
                    "answer")
    assert [label for label, _ in phases.rows] == ["quick evaluator"]
    assert capsys.readouterr().out.startswith("A quick relevance evaluator for the first answer")


def test_the_quick_stack_builds_then_indexes_with_the_embedder_now_installed(
        env: Path, monkeypatch: pytest.MonkeyPatch, provisioned: list[dict[str, Any]],
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRAINED_MODELS", "off")
    given = Settings.from_env()
    monkeypatch.setenv("EMBEDDING_MODEL", str(env / "models" / "e5-small-statutes"))  # what setup installed
    indexed: list = []
    phases = Phases()
    current, used = quick_stack(given, build_parser(extensions=()), recording(indexed), phases)
    assert provisioned == [{"train": False, "phases": phases}]  # no training before the first answer
    assert used == "judge: the LLM (TRAINED_MODELS=off)"
    [(args, settings)] = indexed
    assert (args.command, args.quiet, args.laws, args.files) == ("index", True, None, None)  # the default laws
    assert settings is current and current.embedding_model == str(env / "models" / "e5-small-statutes")
    assert current.data_dir == given.data_dir
    assert capsys.readouterr().out == "e5-small ready\nLLM ready\nran index\n"
    assert [label for label, _ in phases.rows] == ["index the default laws"]


def test_the_demo_answers_first_then_trains_and_reindexes_with_the_adapted_embedder(
        env: Path, monkeypatch: pytest.MonkeyPatch, provisioned: list[dict[str, Any]],
        capsys: pytest.CaptureFixture[str]) -> None:
    install_evaluator(env / "evaluator", "full")
    adapted = env / "models" / "e5-small-statutes"

    def trained_models(settings: Settings, phases: Phases) -> str:
        monkeypatch.setenv("EMBEDDING_MODEL", str(adapted))  # training installed the adapted embedder
        return "trained models ready (trained)"

    monkeypatch.setattr(provision_module, "trained_models", trained_models)
    indexed: list = []
    asked: list = []
    run_demo("加班费怎么算", Settings.from_env(), build_parser(extensions=()), recording(indexed), recording(asked))
    out = capsys.readouterr().out
    [(question, _)] = asked
    assert (question.command, question.query, question.mode) == ("ask", "加班费怎么算", "agentic")
    assert [settings.embedding_model for _, settings in indexed] == [str(env / "models" / "multilingual-e5-small"),
                                                                    str(adapted)]
    used = "This answer used: embedder multilingual-e5-small; judge: the full relevance evaluator"
    steps = ["e5-small ready", "ran index", "问题：加班费怎么算", "ran ask", used, "trained models ready (trained)",
             "ran index", "Ready: `make run`", "setup phases:"]
    at = 0
    for step in steps:
        at = out.find(step, at)
        assert at >= 0, f"{step!r} is missing or out of order"  # each printed after the one before it
        at += 1
    assert "(embedder e5-small-statutes, evaluator " in out
    summary = out[out.index("setup phases:"):]
    assert all(name in summary for name in ("index the default laws", "answer",
                                            "re-index the default laws with the adapted embedder", "total"))


def test_without_trained_models_the_demo_ends_after_the_answer(env: Path, monkeypatch: pytest.MonkeyPatch,
                                                               provisioned: list[dict[str, Any]],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRAINED_MODELS", "off")
    indexed: list = []
    run_demo("加班费怎么算", Settings.from_env(), build_parser(extensions=()), recording(indexed), recording([]))
    out = capsys.readouterr().out
    assert len(indexed) == 1 and "Now the full stack" not in out and "Ready:" not in out
    assert "This answer used: embedder multilingual-e5-small; judge: the LLM (TRAINED_MODELS=off)." in out
