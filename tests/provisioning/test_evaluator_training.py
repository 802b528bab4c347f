"""Training the relevance evaluator: bad pairs are refused in one line, a tiny training run gives a model that
loads, scores the matching article above an unrelated one and carries an out-of-fold calibration."""

import json
import math

import pytest
from haystack import Document

from components.evaluators.relevance_evaluator import (
    CALIBRATION_FILE,
    EVIDENCE_INPUTS,
    FEATURES,
    MISSING_COSINE,
    RelevanceEvaluator,
    evidence_features,
    linear,
    passage_features,
)
from provisioning.evaluator_training import best_threshold, fit_logistic, question_folds
from provisioning.training_pairs import MIN_PAIRS, Pair, TrainingDataError, check_gold, load_pairs

PIPL = "中华人民共和国个人信息保护法"


def write(tmp_path, lines):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def good_lines(n):
    return [json.dumps({"query": f"问题{i}", "gold": [f"{PIPL}第{i}条"]}, ensure_ascii=False) for i in range(n)]


def test_a_well_formed_file_loads(tmp_path):
    pairs = load_pairs(write(tmp_path, good_lines(MIN_PAIRS) + [""]))
    assert len(pairs) == MIN_PAIRS and pairs[0] == Pair("问题0", (f"{PIPL}第0条",), "1")


@pytest.mark.parametrize(("lines", "message"), [
    (["{not json"] + good_lines(60), "line 1: not JSON"),
    (['{"gold": ["x"]}'] + good_lines(60), "line 1: no 'query' text"),
    (['{"query": "问", "gold": []}'] + good_lines(60), "'gold' must be a non-empty list"),
    (['{"query": "问", "gold": "民法典第一条"}'] + good_lines(60), "'gold' must be a non-empty list"),
    (good_lines(MIN_PAIRS - 1), f"{MIN_PAIRS - 1} usable pairs; at least {MIN_PAIRS}"),
])
def test_bad_pairs_are_one_line_errors(tmp_path, lines, message):
    with pytest.raises(TrainingDataError, match=message) as caught:
        load_pairs(write(tmp_path, lines))
    assert "\n" not in str(caught.value)


def test_a_missing_or_binary_file_is_refused(tmp_path):
    with pytest.raises(TrainingDataError, match="not found"):
        load_pairs(tmp_path / "nope.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00\x01" * 100)
    with pytest.raises(TrainingDataError, match="UTF-8"):
        load_pairs(binary)


def test_gold_keys_outside_the_collection_are_counted_with_examples():
    pairs = [Pair("问", ("甲法第一条", "乙法第二条")), Pair("问", ("丙法第三条", "丁法第四条", "known"))]
    with pytest.raises(TrainingDataError,
                       match=r"4 gold key\(s\) are not in kb, e.g. 丁法第四条, 丙法第三条, 乙法第二条"):
        check_gold(pairs, {"known"}, "kb")
    check_gold([Pair("问", ("known",))], {"known"})  # nothing missing: no error


def test_logistic_fit_and_threshold_follow_the_labels():
    fit = fit_logistic([[-3.0], [-2.0], [-1.0], [1.0], [2.0], [3.0], [0.5], [-0.5]], [0, 0, 0, 1, 1, 1, 1, 0], 10.0)
    assert linear(fit, [2.0]) > 0 > linear(fit, [-2.0])  # a higher signal means more likely relevant
    assert best_threshold([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) in (0.5, 0.8)
    assert best_threshold([0.1, 0.6, 0.7, 0.9], [0, 0, 1, 1]) == 0.7
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        fit_logistic([[1.0], [2.0]], [1, 1], 1.0)


def hit(path, rank, score):
    return {"path": path, "query": "q", "rank": rank, "score": score}


def test_passage_features_read_the_retrieval_trace_and_the_text():
    doc = Document(content="处理个人信息应当取得个人同意", meta={"law": PIPL, "retrieval": {"hits": [
        hit("bm25", 3, 12.0), hit("dense", 1, 0.91), hit("dense", 4, 0.88)]}})
    features = dict(zip(FEATURES, passage_features({"个人信息", "同意", "罚款"}, doc, position=0), strict=True))
    assert features["dense_cosine"] == 0.91 and features["word_share"] == 2 / 3
    assert features["found_bm25"] == features["found_dense"] == 1.0
    assert features["log_bm25_rank"] == pytest.approx(math.log(3)) and features["log_dense_rank"] == 0.0
    lonely = dict(zip(FEATURES, passage_features(set(), Document(content="x"), position=4), strict=True))
    assert lonely["found_dense"] == 0.0 and lonely["dense_cosine"] == MISSING_COSINE and lonely["word_share"] == 0.0
    assert lonely["log_position"] == pytest.approx(math.log(5))


def test_the_tiny_model_ranks_the_matching_article_first_and_is_calibrated_out_of_fold(tiny_evaluator):
    trained = json.loads((tiny_evaluator / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert trained["features"] == list(FEATURES) and 0.0 < trained["threshold"] < 1.0
    assert trained["evidence_inputs"] == EVIDENCE_INPUTS and trained["recipe"]["evidence_inputs"] == EVIDENCE_INPUTS
    assert 0.0 < trained["good_evidence_share"] < 1.0  # the calibration saw good and bad evidence
    evaluator = RelevanceEvaluator(model=str(tiny_evaluator))
    evaluator.warm_up()
    query = "个人信息处理者在处理个人信息前"
    match = Document(content="个人信息处理者在处理个人信息前，"
                             "应当以显著方式、清晰易懂的语言真实、准确、完整地向个人告知下列事项",
                     meta={"law": PIPL, "key": f"{PIPL}第十七条",
                           "retrieval": {"hits": [hit("bm25", 1, 20.0), hit("dense", 1, 0.93)]}})
    unrelated = Document(content="国家网信部门统筹协调有关部门依据本法推进个人信息保护工作",
                         meta={"law": PIPL, "key": f"{PIPL}第六十二条", "retrieval": {"hits": [hit("dense", 60, 0.8)]}})
    logits = evaluator.passage_logits(query, [unrelated, match])
    assert logits[1] > logits[0]
    evaluation = evaluator.run(query=query, documents=[match, unrelated])["evaluation"]
    assert [p["key"] for p in evaluation["passages"]] == [f"{PIPL}第十七条", f"{PIPL}第六十二条"]
    assert evaluation["passages"][0]["probability"] > evaluation["passages"][1]["probability"]
    assert 0.0 <= evaluation["probability"] <= 1.0 and evaluation["llm_calls"] == 0


def test_a_question_and_its_retelling_share_a_fold_and_the_folds_are_balanced():
    pairs = [Pair(f"问题{i}", (f"{PIPL}第一条",), str(i)) for i in range(20)]
    pairs += [Pair(f"我的经历{i}……", (f"{PIPL}第一条",), str(i)) for i in range(0, 20, 2)]  # retellings
    pairs += [Pair("没有编号的问题", (f"{PIPL}第一条",))] * 2
    fold_of = question_folds(pairs, folds=5, seed=0)
    for j in range(20, 30):
        assert fold_of[j] == fold_of[int(pairs[j].qid)]
    assert sorted(list(fold_of.values())[:20] + [fold_of[30], fold_of[31]]).count(0) in (4, 5)
    assert question_folds(pairs, folds=5, seed=0) == fold_of  # fixed by the seed


def test_the_evidence_inputs_are_probabilities_that_rise_with_every_passage_score():
    """The evidence model reads the sigmoid of the best, best-two mean and mean logits: bounded, and no input can
    fall as a passage scores higher (a squared logit, which calibrated as well, fell again below about -1.4)."""
    base = [-3.0, -2.0, -1.0, -0.5, 0.5]
    inputs = evidence_features(base)
    assert inputs == pytest.approx([1 / (1 + math.exp(-v)) for v in (0.5, 0.0, -1.2)])
    for i in range(len(base)):
        raised = evidence_features([v + 1.0 if j == i else v for j, v in enumerate(base)])
        assert all(0.0 < r < 1.0 and r >= b for r, b in zip(raised, inputs, strict=True))
