"""RelevanceEvaluator: init validation, serialisation round trip, clear errors, and JUDGE=both's note writer."""

import json

import pytest
from haystack import Document
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.utils import Secret

from components.evaluators.llm_quality_judge import LLMQualityJudge
from components.evaluators.relevance_evaluator import FEATURES, RelevanceEvaluator, load_calibration
from harness.llm_script import JUDGE, judge
from harness.openai_server import ScriptedOpenAIServer

PIPL = "中华人民共和国个人信息保护法"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"top_n": 0}, "top_n must be >= 1"),
    ({"threshold": 1.0}, "threshold must be between 0 and 1"),
    ({"threshold": 0.0}, "threshold must be between 0 and 1"),
])
def test_init_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RelevanceEvaluator(model="m", **kwargs)


def test_round_trip_with_and_without_note_writer():
    plain = RelevanceEvaluator(model="models/x", top_n=3, threshold=0.4)
    assert plain.to_dict() == {"type": "components.evaluators.relevance_evaluator.RelevanceEvaluator",
                               "init_parameters": {"model": "models/x", "top_n": 3, "threshold": 0.4,
                                                   "note_writer": None}}
    assert RelevanceEvaluator.from_dict(plain.to_dict()).to_dict() == plain.to_dict()
    both = RelevanceEvaluator(model="models/x", note_writer=LLMQualityJudge(top_n=4, pass_score=30))
    restored = RelevanceEvaluator.from_dict(both.to_dict())
    assert isinstance(restored.note_writer, LLMQualityJudge) and restored.note_writer.pass_score == 30
    assert restored.to_dict() == both.to_dict()


def test_a_folder_that_is_not_an_evaluator_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not a trained relevance evaluator.*pipelines train.*JUDGE=llm"):
        load_calibration(tmp_path)
    with pytest.raises(RuntimeError, match="not warmed up"):
        RelevanceEvaluator(model=str(tmp_path)).passage_logits("问", [Document(content="x")])
    (tmp_path / "evaluator.json").write_text('{"passage": {}, "evidence": {}, "threshold": 0.5, "features": ["x"]}')
    with pytest.raises(ValueError, match="trained on other features; retrain"):
        load_calibration(tmp_path)
    # an evaluator trained before the evidence inputs changed (no "evidence_inputs") is refused, not misread
    (tmp_path / "evaluator.json").write_text(json.dumps({"passage": {}, "evidence": {}, "threshold": 0.5,
                                                         "features": list(FEATURES)}))
    with pytest.raises(ValueError, match="trained on other features; retrain"):
        load_calibration(tmp_path)
    (tmp_path / "evaluator.json").write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        load_calibration(tmp_path)


def test_no_documents_fail_without_a_call(tiny_evaluator):
    evaluator = RelevanceEvaluator(model=str(tiny_evaluator))
    evaluator.warm_up()
    evaluation = evaluator.run(query="公司收集个人信息需要同意吗", documents=[])["evaluation"]
    assert not evaluation["passed"] and evaluation["probability"] == 0.0 and evaluation["llm_calls"] == 0
    assert evaluation["missing"]


def note_writer(server: ScriptedOpenAIServer) -> LLMQualityJudge:
    generator = OpenAIChatGenerator(api_key=Secret.from_token("unused"), model="local", api_base_url=server.base_url,
                                    timeout=2, max_retries=0)
    return LLMQualityJudge(chat_generator=generator)


def test_both_asks_the_llm_for_a_note_only_when_the_evidence_fails(tiny_evaluator):
    docs = [Document(content="个人信息处理者在处理个人信息前，应当以显著方式、清晰易懂的语言向个人告知",
                     meta={"law": PIPL, "article_no": "第十七条", "key": f"{PIPL}第十七条"})]
    probe = RelevanceEvaluator(model=str(tiny_evaluator))
    probe.warm_up()
    probability = probe.evidence_probability(probe.passage_logits("处理个人信息前应当告知", docs))
    with ScriptedOpenAIServer() as server:
        server.add_rule(JUDGE, judge(4, "缺少关于同意例外的规定"))
        passing = RelevanceEvaluator(model=str(tiny_evaluator), threshold=probability / 2,
                                     note_writer=note_writer(server))
        passing.warm_up()
        assert passing.run(query="处理个人信息前应当告知", documents=docs)["evaluation"]["passed"]
        assert server.requests == []  # a pass costs no LLM call
        failing = RelevanceEvaluator(model=str(tiny_evaluator), threshold=(1 + probability) / 2,
                                     note_writer=note_writer(server))
        failing.warm_up()
        evaluation = failing.run(query="处理个人信息前应当告知", documents=docs)["evaluation"]
        assert not evaluation["passed"] and len(server.calls(JUDGE)) == 1
        assert evaluation["missing"] == "缺少关于同意例外的规定" and evaluation["llm_calls"] == 1
        assert evaluation["llm_judge"]["total"] == 16.0


def test_evaluator_ranker_reorders_the_head_and_keeps_the_tail(tiny_evaluator):
    from components.rankers.evaluator_ranker import EvaluatorRanker

    with pytest.raises(ValueError, match="top_n must be >= 1"):
        EvaluatorRanker(model="m", top_n=0)

    def doc(key, content, hits):
        return Document(content=content, meta={"law": PIPL, "key": key, "retrieval": {"hits": hits}})
    weak = doc("weak", "国家网信部门统筹协调个人信息保护工作", [{"path": "dense", "rank": 90, "score": 0.78}])
    strong = doc("strong", "处理个人信息应当取得个人同意", [{"path": "bm25", "rank": 1, "score": 20.0},
                                                        {"path": "dense", "rank": 1, "score": 0.93}])
    tail = doc("tail", "其他", [])
    ranker = EvaluatorRanker(model=str(tiny_evaluator), top_n=2)
    ranker.warm_up()
    ranked = ranker.run(query="处理个人信息需要取得个人同意吗", documents=[weak, strong, tail])["documents"]
    assert [d.meta["key"] for d in ranked] == ["strong", "weak", "tail"]
    assert ranked[0].score > ranked[1].score and ranked[2].score is None
    data = component_to_dict(ranker, "reranker")
    assert data["init_parameters"] == {"model": str(tiny_evaluator), "top_n": 2, "top_k": None}
    assert component_to_dict(component_from_dict(EvaluatorRanker, data, "reranker"), "reranker") == data
    assert [d.meta["key"] for d in ranker.run(query="同意", documents=[weak, strong, tail], top_k=1)["documents"]] \
        == ["strong"]
    with pytest.raises(ValueError, match="top_k"):
        EvaluatorRanker(model="m", top_k=0)
    kept = EvaluatorRanker(model=str(tiny_evaluator), top_n=2, top_k=2)  # the pipeline's cut, set at build time
    kept.warm_up()
    assert [d.meta["key"] for d in kept.run(query="同意", documents=[weak, strong, tail])["documents"]] \
        == ["strong", "weak"]
