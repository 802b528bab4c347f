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


def test_retold_questions_are_a_slice_of_their_own_beside_the_real_ones():
    from benchmarks.judge_calibration import slices_table

    def row(kind: str, chars: int, good: bool, probability: float) -> dict:
        return {"kind": kind, "chars": chars, "gold": ["甲法第一条"], "labels": [int(good), 0, 0, 0, 0],
                "probability": probability, "threshold": 0.5}

    rows = [row("in corpus", 12, True, 0.8), row("in corpus", 40, False, 0.3),
            row("retold", 66, True, 0.9), row("retold", 70, False, 0.7), row("retold", 90, False, 0.2)]
    lines = {line.split(" | ")[0].lstrip("| "): line for line in slices_table(rows, judged=5).splitlines()}
    retold = lines["retold by the local LLM (a stress set, not a yardstick)"].split(" | ")
    assert retold[1:5] == ["3", "0.333", "0.667", "+0.333"]  # n, good, pass rate, pass − good
    assert lines["short (< 30 characters)"].split(" | ")[1] == "1"  # the retellings are not counted as real questions
    assert "not run" in lines["out of corpus (evaluator folds grouped by the cited document)"]


def test_the_calibration_error_puts_each_row_in_its_bin_and_weighs_bins_by_their_rows():
    from benchmarks.judge_calibration import expected_calibration_error

    # bin [0.2, 0.3): mean 0.25, observed 0.5, 2 of 4 rows; bin [0.9, 1.0]: mean 0.95, observed 1.0, 2 of 4 rows
    assert abs(expected_calibration_error([0.2, 0.3 - 1e-9, 0.9, 1.0], [1, 0, 1, 1]) - (0.5 * 0.25 + 0.5 * 0.05)) < 1e-6
    one_bin = expected_calibration_error([0.35, 0.35], [0, 1]), expected_calibration_error([0.34, 0.36], [0, 1])
    assert abs(one_bin[0] - 0.15) < 1e-9 and abs(one_bin[1] - 0.15) < 1e-9  # within a bin only the sums count
    assert expected_calibration_error([0.29, 0.31], [0, 1]) > 0.4  # two bins: 0.29 said of a miss, 0.31 of a hit


def test_a_calibrated_judge_shows_a_calibration_error_that_shrinks_with_the_slice():
    """The ECE that binning noise alone gives: the bar an observed ECE is read against on a slice of that size."""
    from benchmarks.judge_calibration import calibrated_ece

    small, large = calibrated_ece([0.3, 0.7] * 25, draws=300), calibrated_ece([0.3, 0.7] * 2500, draws=300)
    assert small[0] > 0.05 > large[0] and small[1] > small[0] and large[1] > large[0]
    assert calibrated_ece([0.3, 0.7] * 25, draws=300) == small  # seeded: the report does not change between runs
    assert calibrated_ece([0.0, 1.0] * 50, draws=50) == (0.0, 0.0)  # certain labels leave nothing to chance
