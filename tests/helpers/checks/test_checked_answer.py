"""`helpers.checks.checked_answer.CheckedAnswer`: the record of one checked answer and the report the trace keeps
(``trace["answer_checks"]``, which the answer benchmark scores: `benchmarks.answers.score`)."""

import json

from haystack import Document

from helpers.checks.checked_answer import CheckedAnswer


def filled() -> CheckedAnswer:
    return CheckedAnswer(text="【建议】协商。", verified=[Document(content="第一条 正文。")],
                         unverified=["《某法》第九条"], mentions={"某法第一条": ["第一条"]},
                         rendered=["某法第一条"], excerpts=1, quotes_checked=2, quotes_replaced=["错的引文"],
                         quotes_relabelled=["第二条 → 第一条"], quotes_flagged=["无据引文"], numbers_checked=3,
                         numbers_flagged=["八个月"], sections_dropped=["尚缺信息"], cut_off="因此")


def test_the_report_names_what_the_answer_benchmark_reads() -> None:
    """`benchmarks.answers.score` reads these names with ``.get(...) or []``: a renamed key would score 0 silently."""
    report = filled().report()
    assert report["rendered_articles"] == ["某法第一条"]
    assert (report["quotes_replaced"], report["quotes_relabelled"], report["quotes_flagged"]) == (
        ["错的引文"], ["第二条 → 第一条"], ["无据引文"])
    assert report["sections_dropped"] == ["尚缺信息"] and report["numbers_flagged"] == ["八个月"]
    assert (report["excerpts"], report["quotes_checked"], report["numbers_checked"]) == (1, 2, 3)
    assert report["cut_off"] == "因此"


def test_the_report_is_json_without_the_answer_or_the_evidence() -> None:
    """The trace is sent as JSON: the report names articles by key; the answer and its Documents travel elsewhere."""
    report = filled().report()
    text = json.dumps(report, ensure_ascii=False)
    assert json.loads(text) == report
    assert "【建议】协商。" not in text and "第一条 正文。" not in text and "某法》第九条" not in text


def test_a_fresh_record_reports_that_nothing_was_done() -> None:
    report = CheckedAnswer(text="好的。").report()
    assert report and all(value in (0, "", []) for value in report.values())
