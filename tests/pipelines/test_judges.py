"""JUDGE: which judge the loop gets, resolved in one place, with clear errors."""

import dataclasses

import pytest

from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.evaluators.relevance_evaluator import RelevanceEvaluator
from config.settings import Settings
from pipelines.judges import make_judge, resolve_judge


@pytest.fixture
def offline(monkeypatch):
    for name in ("DEEPSEEK_API_KEY", "LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def with_judge(judge: str, model: str, **changes) -> Settings:
    return dataclasses.replace(Settings(), judge=judge, evaluator_model=model, **changes)


def test_auto_is_the_evaluator_offline_and_both_with_an_api_model(tiny_evaluator, offline, monkeypatch):
    assert resolve_judge(with_judge("auto", str(tiny_evaluator))) == "evaluator"
    assert resolve_judge(with_judge("auto", str(tiny_evaluator), llm_base_url="http://127.0.0.1:9/v1")) == "both"
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    assert resolve_judge(with_judge("auto", str(tiny_evaluator))) == "both"


def test_auto_without_a_trained_evaluator_is_the_llm(tmp_path, tiny_evaluator, offline):
    assert resolve_judge(with_judge("auto", str(tmp_path / "missing"))) == "llm"
    assert resolve_judge(with_judge("auto", str(tiny_evaluator), trained_models=False)) == "llm"


def test_explicit_choices_and_errors(tmp_path, tiny_evaluator, offline):
    assert resolve_judge(with_judge("llm", str(tmp_path))) == "llm"
    with pytest.raises(ValueError, match="JUDGE must be one of auto, evaluator, both, llm, got 'gpt'"):
        resolve_judge(with_judge("gpt", str(tiny_evaluator)))
    with pytest.raises(ValueError, match="JUDGE=evaluator needs the trained relevance evaluator.*pipelines setup"):
        resolve_judge(with_judge("evaluator", str(tmp_path / "missing")))
    with pytest.raises(ValueError, match="TRAINED_MODELS=off"):
        resolve_judge(with_judge("both", str(tiny_evaluator), trained_models=False))


def test_make_judge_builds_the_component(tiny_evaluator, offline):
    assert isinstance(make_judge(with_judge("llm", "")), LLMQualityJudge)
    evaluator = make_judge(with_judge("evaluator", str(tiny_evaluator), evaluator_threshold=0.3))
    assert isinstance(evaluator, RelevanceEvaluator) and evaluator.note_writer is None and evaluator.threshold == 0.3
    both = make_judge(with_judge("both", str(tiny_evaluator)))
    assert isinstance(both.note_writer, LLMQualityJudge)


def test_threshold_setting_is_checked(monkeypatch):
    monkeypatch.setenv("EVALUATOR_THRESHOLD", "1.5")
    with pytest.raises(ValueError, match="EVALUATOR_THRESHOLD must be between 0 and 1"):
        Settings.from_env()


def test_reranker_evaluator_is_the_trained_model_and_unknown_rerankers_list_the_choices(tiny_evaluator):
    from components.rankers.evaluator_ranker import EvaluatorRanker
    from pipelines.retrieval import make_reranker

    ranker = make_reranker(with_judge("llm", str(tiny_evaluator), reranker="evaluator"))
    assert isinstance(ranker, EvaluatorRanker) and ranker.model == str(tiny_evaluator) and ranker.top_n == 20
    with pytest.raises(ValueError, match="RERANKER must be one of .*'evaluator'"):
        make_reranker(with_judge("llm", str(tiny_evaluator), reranker="colbert"))


def test_an_evaluator_trained_on_other_vectors_is_flagged(tiny_evaluator, tmp_path, offline):
    import json

    from pipelines.embedders import embedding_fingerprint
    from pipelines.judges import warn_if_other_vectors

    trained = json.loads((tiny_evaluator / "evaluator.json").read_text(encoding="utf-8"))
    settings = with_judge("evaluator", str(tmp_path))
    (tmp_path / "evaluator.json").write_text(json.dumps({**trained, "embedding": "0123456789abcdef"}), encoding="utf-8")
    assert warn_if_other_vectors(settings)
    assert isinstance(make_judge(settings), RelevanceEvaluator)  # still usable: a warning, not an error
    (tmp_path / "evaluator.json").write_text(json.dumps({**trained, "embedding": embedding_fingerprint(settings)}),
                                             encoding="utf-8")
    assert not warn_if_other_vectors(settings)


def test_an_evaluator_trained_on_other_inputs_is_not_counted_as_installed(tiny_evaluator, tmp_path):
    """Set-up installs the quick evaluator where no full one is; one trained before the evidence inputs changed
    must count as none, or the first answer after an upgrade would stop at its load error."""
    import json

    from pipelines.judges import describe_judge, evaluator_scope

    trained = json.loads((tiny_evaluator / "evaluator.json").read_text(encoding="utf-8"))
    settings = with_judge("evaluator", str(tmp_path))
    (tmp_path / "evaluator.json").write_text(json.dumps({**trained, "scope": "full"}), encoding="utf-8")
    assert evaluator_scope(settings) == "full"
    older = {k: v for k, v in trained.items() if k != "evidence_inputs"}
    (tmp_path / "evaluator.json").write_text(json.dumps({**older, "scope": "full"}), encoding="utf-8")
    assert evaluator_scope(settings) is None
    assert "must be retrained (retrain with `python -m pipelines train`)" in describe_judge(settings)
    with pytest.raises(ValueError, match="trained on other features; retrain"):
        make_judge(settings).warm_up()


def test_the_coverage_check_is_used_while_on_and_trained_and_said_in_the_judges_description(
        tmp_path, tiny_evaluator, tiny_coverage, offline, pipl_store):
    from pipelines.judges import describe_judge, make_coverage_check

    on = with_judge("evaluator", str(tiny_evaluator), coverage_check=True, coverage_model=str(tiny_coverage))
    check = make_coverage_check(on, pipl_store)
    assert check is not None and check.model == str(tiny_coverage) and check.document_store is pipl_store
    assert describe_judge(on).endswith("+ the coverage check (uncovered verdict)")
    for off in (dataclasses.replace(on, coverage_check=False), dataclasses.replace(on, trained_models=False),
                dataclasses.replace(on, coverage_model=str(tmp_path / "missing"))):
        assert make_coverage_check(off, pipl_store) is None and "coverage" not in describe_judge(off)
    # the YAML export builds it whenever it is on, trained here or not
    untrained = dataclasses.replace(on, coverage_model=str(tmp_path / "missing"))
    assert make_coverage_check(untrained, None, require_model=False).model == str(tmp_path / "missing")
