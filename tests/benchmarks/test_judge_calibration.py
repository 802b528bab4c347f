from benchmarks.judge_calibration import feedback_outside
from provisioning.training_pairs import Pair


def test_a_fold_never_trains_on_feedback_about_a_question_it_scores():
    scored = [Pair("试用期多长", ("劳动合同法第十九条",), "7"), Pair("加班费怎么算", ("劳动法第四十四条",), "8")]
    feedback = [
        Pair("我签了三年合同，试用期能约定六个月吗", ("劳动合同法第十九条",), "7"),  # a retelling of question 7
        Pair("加班费怎么算", ("劳动法第四十四条",), "feedback-2"),  # the same text, given as feedback
        Pair("公司不交社保怎么办", ("劳动合同法第三十八条",), "feedback-3"),
    ]
    assert [p.qid for p in feedback_outside(feedback, scored)] == ["feedback-3"]
    assert feedback_outside(feedback, []) == feedback
