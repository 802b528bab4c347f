"""Quantities a legal answer states (`helpers.statutes.quantities`): Chinese and Arabic numerals read to the same
(value, unit), 万元 scaled, ranges giving one quantity per bound, the spans they were read from, what is not a
quantity (article numbers, dates, years, 一人公司) and `number_value`'s `ValueError`. The answer check's use of
them (an invented number flagged) is in tests/helpers/checks/test_answer_check.py."""

import pytest

from helpers.statutes.quantities import Quantity, number_value, quantities


def keys(text: str) -> list[tuple[float, str]]:
    return [q.key for q in quantities(text)]


def test_the_docstring_example():
    assert keys("试用期不得超过二个月，罚款1000至2000元") == [(2.0, "月"), (1000.0, "元"), (2000.0, "元")]


@pytest.mark.parametrize(("written", "key"), [
    ("六个月", (6.0, "月")), ("6个月", (6.0, "月")), ("两个月", (2.0, "月")),
    ("二千元", (2000.0, "元")), ("2000元", (2000.0, "元")),
    ("五万元", (50_000.0, "元")), ("1万元", (10_000.0, "元")), ("一万元", (10_000.0, "元")),
    ("1.5万元", (15_000.0, "元")), ("一千万元", (10_000_000.0, "元")), ("1亿元", (100_000_000.0, "元")),
    ("十六周岁", (16.0, "岁")), ("16岁", (16.0, "岁")),
    ("百分之三十", (30.0, "%")), ("30%", (30.0, "%")), ("30％", (30.0, "%")), ("１０％", (10.0, "%")),
    ("百分之一点五", (1.5, "%")),
    ("30日", (30.0, "日")), ("十五天", (15.0, "日")), ("三个工作日", (3.0, "工作日")), ("两个工作日", (2.0, "工作日")),
    ("二十四小时", (24.0, "小时")), ("半年", (0.5, "年")), ("三年", (3.0, "年")), ("五十年", (50.0, "年")),
    ("两周", (2.0, "周")), ("一星期", (1.0, "周")),
    ("二倍", (2.0, "倍")), ("三点五倍", (3.5, "倍")), ("三十名", (30.0, "人")), ("二十人", (20.0, "人")),
    ("三次", (3.0, "次")),
])
def test_each_writing_reads_as_one_value_and_canonical_unit(written, key):
    assert keys(f"依法应当在{written}内处理") == [key]


def test_the_longest_unit_wins():
    assert keys("十五个工作日") == [(15.0, "工作日")]  # not 十五日
    assert keys("十二个小时") == [(12.0, "小时")]


@pytest.mark.parametrize(("text", "expected"), [
    ("3至6个月", [(3.0, "月"), (6.0, "月")]),
    ("三到六个月", [(3.0, "月"), (6.0, "月")]),
    ("3-6个月", [(3.0, "月"), (6.0, "月")]),
    ("5～10日", [(5.0, "日"), (10.0, "日")]),
    ("1至2万元", [(10_000.0, "元"), (20_000.0, "元")]),  # the lower bound is scaled too
    ("五万元以上五十万元以下", [(50_000.0, "元"), (500_000.0, "元")]),
])
def test_a_range_gives_one_quantity_per_bound_lower_first(text, expected):
    assert keys(text) == expected


def test_spans_point_at_the_text_each_quantity_was_read_from():
    text = "试用期不得超过二个月，罚款1000至2000元"
    month, low, high = quantities(text)
    assert text[month.start:month.end] == "二个月"
    assert text[low.start:low.end] == text[high.start:high.end] == "1000至2000元"  # a range shares its span
    assert month == Quantity(2.0, "月", 7, 10)


def test_quantities_come_in_the_order_of_the_text():
    text = "处五万元以上五十万元以下罚款，责令在三十日内改正，逾期二倍赔偿"
    assert keys(text) == [(50_000.0, "元"), (500_000.0, "元"), (30.0, "日"), (2.0, "倍")]
    assert [q.start for q in quantities(text)] == sorted(q.start for q in quantities(text))


@pytest.mark.parametrize("text", [
    "《中华人民共和国个人信息保护法》第十四条",
    "《中华人民共和国民法典》第一千零三十二条",
    "第3日",  # an ordinal, not a duration
    "第三次审议",
    "本法自2021年11月1日起施行",
    "二〇二一年八月二十日通过",
    "2021年",
    "1999年的规定",
    "设立一人公司",  # 一人 and 一次 are words more often than counts
    "一次性支付",
    "没有任何数量的句子",
    "",
])
def test_article_numbers_dates_years_and_words_are_not_quantities(text):
    assert quantities(text) == []


def test_a_date_is_skipped_and_the_duration_after_it_is_read():
    assert keys("本法自2021年1月1日起施行，试用期六个月") == [(6.0, "月")]
    assert keys("二人以上共同侵权") == [(2.0, "人")]  # a count of two is a count
    assert keys("2000年以来已满3年") == [(3.0, "年")]  # a year is not a duration, a short span is


@pytest.mark.parametrize(("text", "value"), [
    ("二", 2.0), ("两", 2.0), ("十三", 13.0), ("一千零三十二", 1032.0), ("1.5", 1.5), ("30", 30.0),
    ("半", 0.5), ("三点五", 3.5), ("零点五", 0.5), ("二点零五", 2.05),
])
def test_number_value(text, value):
    assert number_value(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["", "x", "第三", "1.2.3", "三条", "半年", "-1"])
def test_number_value_refuses_what_is_no_number(bad):
    with pytest.raises(ValueError):
        number_value(bad)


def test_a_chinese_decimal_before_wan_is_scaled_like_an_arabic_one():
    """number_value('三点五万') read 万 as a fraction digit: 三点五万元 was 3.5元."""
    assert keys("罚款三点五万元") == keys("罚款3.5万元") == [(35_000.0, "元")]


def test_an_amount_with_thousands_separators_is_not_read_as_zero():
    """A thousands separator split the number: 10,000元 was 000元 = 0元, so 10,000元 for 一万元 was flagged."""
    assert keys("罚款10,000元") == [(10_000.0, "元")]


@pytest.mark.parametrize("text", ["万万元", "十百元"])
def test_a_run_of_numerals_that_is_no_number_is_skipped(text):
    assert quantities(text) == []
