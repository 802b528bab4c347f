"""Which judge the loop uses (``JUDGE``), in one place.

- ``evaluator``: the trained `RelevanceEvaluator` decides; no LLM call (the offline default).
- ``both``: the evaluator decides; only when the evidence fails does the LLM judge write the missing-information
  note for the rewriter (the default with an API model: ``DEEPSEEK_API_KEY`` or ``LLM_BASE_URL``).
- ``llm``: `LLMQualityJudge`'s 4 × 10 rubric (the default when no trained evaluator exists, e.g.
  ``TRAINED_MODELS=off``).
- ``auto`` (unset): the defaults above.

Beside the judge, the coverage check (``COVERAGE_CHECK``, `CoverageCheck`) reads each judged round's question and
turns the verdict into ``uncovered`` when the question needs a document the knowledge base lacks; it is used while
its trained model is there (``python -m pipelines train`` trains it in seconds).

Usage::

    judge = make_judge(settings)          # a component with run(query, documents) -> {"evaluation": {...}}
    check = make_coverage_check(settings, store)   # None when off or not trained
"""

from __future__ import annotations

import json
from pathlib import Path

from haystack import logging

from components.evaluators.coverage_check import COVERAGE_FILE, CoverageCheck
from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.evaluators.relevance_evaluator import CALIBRATION_FILE, RelevanceEvaluator, load_calibration
from config.settings import Settings
from document_store.knowledge_base_store import KnowledgeBaseStore
from helpers.records.trained_files import RETRAIN
from llm_access.factory import uses_api_model
from pipelines.embedders import embedding_fingerprint

logger = logging.getLogger(__name__)

JUDGES = ("auto", "evaluator", "both", "llm")


def evaluator_available(settings: Settings) -> bool:
    return settings.trained_models and (Path(settings.evaluator_model) / CALIBRATION_FILE).is_file()


def evaluator_scope(settings: Settings) -> str | None:
    """Which evaluator is installed: ``full`` (trained through the whole corpus with the configured embedder; also
    one trained before scopes were recorded), ``quick`` (the first answer's, `provisioning.quick_start`), or None:
    none, or one this code refuses (`load_calibration`: trained on other inputs), which set-up then replaces."""
    try:
        trained = load_calibration(settings.evaluator_model)
    except ValueError:
        return None
    return str(trained.get("scope", "full"))


def describe_judge(settings: Settings) -> str:
    """The judge these settings use, in words (for `stats` and logs)."""
    try:
        kind = resolve_judge(settings)
    except ValueError as error:
        return f"none usable ({error})"
    coverage = " + the coverage check (uncovered verdict)" if coverage_available(settings) else ""
    if kind == "llm":
        return ("the LLM rubric (no trained evaluator)" if settings.judge == "auto" else "the LLM rubric") + coverage
    note = " + the LLM's note on failure" if kind == "both" else ""
    scope = evaluator_scope(settings)
    if scope is None:  # there, but trained on other inputs: warming it up says how to retrain
        return f"the relevance evaluator at {settings.evaluator_model}, which must be retrained ({RETRAIN})"
    return f"the {scope} relevance evaluator at {settings.evaluator_model}{note}{coverage}"


def resolve_judge(settings: Settings, require_model: bool = True) -> str:
    """The judge ``JUDGE`` names, with ``auto`` resolved; a clear error for an unknown name or a missing model
    (``require_model=False``: build the pipeline anyway, e.g. to export it as YAML)."""
    if settings.judge not in JUDGES:
        raise ValueError(f"JUDGE must be one of {', '.join(JUDGES)}, got {settings.judge!r}")
    if settings.judge == "auto":
        if not evaluator_available(settings):
            logger.info("No trained relevance evaluator at {path}; the LLM judges the evidence",
                        path=settings.evaluator_model)
            return "llm"
        return "both" if uses_api_model(settings) else "evaluator"
    if settings.judge != "llm" and require_model and not evaluator_available(settings):
        why = ("TRAINED_MODELS=off" if not settings.trained_models
               else f"no trained evaluator at {settings.evaluator_model}")
        raise ValueError(f"JUDGE={settings.judge} needs the trained relevance evaluator ({why}); run "
                         "`python -m pipelines setup` (or `train`), or set JUDGE=llm")
    return settings.judge


def warn_if_other_vectors(settings: Settings) -> bool:
    """The evaluator reads dense cosines: trained with other vectors than the configured embedder makes, its
    probabilities are off. Logs a warning and returns True in that case."""
    try:
        trained = json.loads((Path(settings.evaluator_model) / CALIBRATION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # RelevanceEvaluator reports an unreadable model itself
    recorded = trained.get("embedding") if isinstance(trained, dict) else None
    if recorded and recorded != embedding_fingerprint(settings):
        logger.warning("The relevance evaluator at {model} was trained on vectors of another embedder than "
                       "{embedder}; its probabilities may be off. Run `python -m pipelines train`.",
                       model=settings.evaluator_model, embedder=settings.embedding_model)
        return True
    return False


def llm_judge(settings: Settings) -> LLMQualityJudge:
    return LLMQualityJudge(top_n=settings.judge_top_n, pass_score=settings.pass_score)


def make_judge(settings: Settings, require_model: bool = True) -> LLMQualityJudge | RelevanceEvaluator:
    """The judge component of the loop for these settings."""
    kind = resolve_judge(settings, require_model)
    if kind == "llm":
        return llm_judge(settings)
    warn_if_other_vectors(settings)
    return RelevanceEvaluator(model=settings.evaluator_model, top_n=settings.judge_top_n,
                              threshold=settings.evaluator_threshold,
                              note_writer=llm_judge(settings) if kind == "both" else None)


def coverage_available(settings: Settings) -> bool:
    return (settings.coverage_check and settings.trained_models and bool(settings.coverage_model)
            and (Path(settings.coverage_model) / COVERAGE_FILE).is_file())


def make_coverage_check(settings: Settings, document_store: KnowledgeBaseStore | None,
                        require_model: bool = True) -> CoverageCheck | None:
    """The coverage check for these settings, or None: ``COVERAGE_CHECK=off``, ``TRAINED_MODELS=off``, or (with
    ``require_model``) no trained model at ``COVERAGE_MODEL`` yet (logged; the loop runs without the third
    verdict). ``require_model=False`` builds it whenever it is on (YAML export)."""
    if not (settings.coverage_check and settings.trained_models and settings.coverage_model):
        return None
    if require_model and not coverage_available(settings):
        logger.info("No trained coverage check at {path}; the judge has no 'uncovered' verdict until "
                    "`python -m pipelines train` trains it", path=settings.coverage_model)
        return None
    return CoverageCheck(model=settings.coverage_model, document_store=document_store)
