"""EvaluatorRanker with a hand-written evaluator whose passage probability reads only the share of the question's
words a passage holds: σ(4·share − 2). Head/tail order, ``top_k`` at build time, settings and serialisation with a
trained evaluator are in tests/components/evaluators/test_relevance_evaluator.py."""

import json
from pathlib import Path

import pytest
from haystack import Document

from components.evaluators.relevance_evaluator import CALIBRATION_FILE, EVIDENCE_INPUTS, FEATURES
from components.rankers.evaluator_ranker import EvaluatorRanker

QUESTION = "撤回同意"  # jieba: the content words 撤回 and 同意


@pytest.fixture(scope="module")
def word_share_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    weights = [4.0 if name == "word_share" else 0.0 for name in FEATURES]
    passage = {"coef": weights, "mean": [0.0] * len(FEATURES), "scale": [1.0] * len(FEATURES), "intercept": -2.0}
    evidence = {"coef": [1.0, 0.0, 0.0], "mean": [0.0] * 3, "scale": [1.0] * 3, "intercept": 0.0}
    folder = tmp_path_factory.mktemp("word_share_evaluator")
    (folder / CALIBRATION_FILE).write_text(json.dumps({
        "passage": passage, "evidence": evidence, "threshold": 0.5, "features": list(FEATURES),
        "evidence_inputs": EVIDENCE_INPUTS}), encoding="utf-8")
    return str(folder)


def article(key: str, text: str, score: float | None = None) -> Document:
    return Document(content=text, meta={"key": key, "law": "示例法"}, score=score)


NONE = article("none", "机动车应当按规定停放。", 0.9)
HALF = article("half", "处理个人信息应当取得个人同意。", 0.8)
BOTH = article("both", "个人有权撤回其同意。", 0.7)


def ranked(ranker: EvaluatorRanker, documents: list[Document], **kwargs: int) -> list[str]:
    return [d.meta["key"] for d in ranker.run(query=QUESTION, documents=documents, **kwargs)["documents"]]


def test_passages_are_reordered_by_their_probability(word_share_model: str) -> None:
    ranker = EvaluatorRanker(model=word_share_model)
    ranker.warm_up()
    out = ranker.run(query=QUESTION, documents=[NONE, HALF, BOTH])["documents"]
    assert [d.meta["key"] for d in out] == ["both", "half", "none"]
    assert [d.score for d in out] == pytest.approx([0.880797, 0.5, 0.119203], abs=1e-6)  # σ(2), σ(0), σ(−2)


def test_the_inputs_keep_their_retrieval_scores(word_share_model: str) -> None:
    ranker = EvaluatorRanker(model=word_share_model)
    ranker.warm_up()
    ranker.run(query=QUESTION, documents=[NONE, HALF, BOTH])
    assert [d.score for d in (NONE, HALF, BOTH)] == [0.9, 0.8, 0.7]


def test_equal_probabilities_keep_the_fused_order(word_share_model: str) -> None:
    ranker = EvaluatorRanker(model=word_share_model)
    ranker.warm_up()
    first, second = article("first", "个人有权撤回其同意。"), article("second", "同意可以撤回。")
    assert ranked(ranker, [first, second]) == ["first", "second"]
    assert ranked(ranker, [second, first]) == ["second", "first"]


def test_a_run_top_k_overrides_the_one_it_was_built_with(word_share_model: str) -> None:
    ranker = EvaluatorRanker(model=word_share_model, top_k=1)
    ranker.warm_up()
    assert ranked(ranker, [NONE, HALF, BOTH]) == ["both"]
    assert ranked(ranker, [NONE, HALF, BOTH], top_k=2) == ["both", "half"]


def test_no_documents_give_no_documents(word_share_model: str) -> None:
    ranker = EvaluatorRanker(model=word_share_model)
    ranker.warm_up()
    assert ranker.run(query=QUESTION, documents=[]) == {"documents": []}


def test_ranking_before_warm_up_says_so(word_share_model: str) -> None:
    with pytest.raises(RuntimeError, match="not warmed up; call warm_up"):
        EvaluatorRanker(model=word_share_model).run(query=QUESTION, documents=[HALF])


def test_warm_up_on_a_folder_that_is_not_an_evaluator_names_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a trained relevance evaluator .*set JUDGE=llm"):
        EvaluatorRanker(model=str(tmp_path)).warm_up()
