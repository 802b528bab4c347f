"""Training the coverage check: the out-of-corpus questions file, the threshold set out of fold, bad input."""

import json

import pytest

from provisioning.coverage_training import (
    CoverageRecipe,
    OutsideQuestion,
    load_outside,
    out_of_fold_scores,
    train_coverage,
)
from provisioning.training_pairs import TrainingDataError

LENDING = "最高人民法院关于审理民间借贷案件适用法律若干问题的规定"
INFORMATION = "政府信息公开条例"


def questions() -> tuple[list[str], list[OutsideQuestion]]:
    inside = [f"{topic}{ask}" for topic in ("劳动合同解除", "公司收集个人信息", "房屋买卖合同违约", "离婚财产分割",
                                            "交通肇事逃逸", "遗嘱继承顺序", "商标侵权赔偿", "未成年人监护")
              for ask in ("吗", "怎么办", "如何处理", "有什么规定", "需要承担什么责任")]
    outside = [OutsideQuestion(f"{topic}{ask}", document) for topic, document in
               (("民间借贷利息过高", LENDING), ("借款转贷牟利", LENDING), ("申请政府信息公开", INFORMATION),
                ("行政机关不公开信息", INFORMATION))
               for ask in ("吗", "怎么办", "如何处理", "有什么规定", "需要承担什么责任", "合法吗")]
    return inside, outside


def test_the_threshold_flags_about_the_asked_share_of_in_corpus_questions_out_of_fold():
    inside, outside = questions()
    model = train_coverage(inside, outside, CoverageRecipe(flag_rate=0.1))
    assert model["questions"] == {"inside": 40, "outside": 24}
    assert model["cv"]["flagged_inside"] <= 0.1 + 1 / 40
    assert model["cv"]["caught_outside"] > 0.5 and model["cv"]["auc"] > 0.8
    assert {q["document"] for q in model["outside"]} == {LENDING, INFORMATION}
    assert len(model["coef"]) == len(model["idf"]) == len(model["vocabulary"])
    assert json.loads(json.dumps(model, ensure_ascii=False)) == model  # what coverage.json holds


def test_out_of_fold_scores_come_from_models_that_did_not_see_the_question():
    inside, outside = questions()
    texts = inside + [q.query for q in outside]
    labels = [0] * len(inside) + [1] * len(outside)
    import numpy as np

    scores = out_of_fold_scores(texts, np.asarray(labels), CoverageRecipe())
    assert scores.shape == (len(texts),) and ((0 < scores) & (scores < 1)).all()
    assert scores[len(inside):].mean() > scores[: len(inside)].mean()


def test_too_few_questions_and_bad_recipes_are_refused():
    inside, outside = questions()
    with pytest.raises(TrainingDataError, match="at least 20 are needed"):
        train_coverage(inside, outside[:5])
    with pytest.raises(TrainingDataError, match="in-corpus"):
        train_coverage(inside[:3], outside)
    with pytest.raises(ValueError, match="flag_rate"):
        CoverageRecipe(flag_rate=0)
    with pytest.raises(ValueError, match="folds"):
        CoverageRecipe(folds=1)


def test_the_out_of_corpus_file_is_read_and_bad_lines_are_one_error(tmp_path):
    path = tmp_path / "outside.jsonl"
    path.write_text('{"qid": 7, "query": " 复利合法吗 ", "gold": [], "cited": ["' + LENDING + '", "民法典"]}\n\n',
                    encoding="utf-8")
    assert load_outside(path) == [OutsideQuestion("复利合法吗", LENDING, "7")]
    path.write_text('{"query": "问", "cited": []}\n{broken\n', encoding="utf-8")
    with pytest.raises(TrainingDataError, match="2 malformed line"):
        load_outside(path)
    with pytest.raises(TrainingDataError, match="out-of-corpus questions file not found"):
        load_outside(tmp_path / "missing.jsonl")
