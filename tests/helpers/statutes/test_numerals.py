import pytest

from helpers.statutes.numerals import cn_to_int, int_to_cn


@pytest.mark.parametrize(
    ("text", "value"),
    [("一", 1), ("十", 10), ("十三", 13), ("二十", 20), ("一百零一", 101), ("一百一十", 110),
     ("一千零三十二", 1032), ("一千二百六十", 1260), ("两千", 2000), ("1032", 1032)],
)
def test_cn_to_int(text, value):
    assert cn_to_int(text) == value


@pytest.mark.parametrize("value", [1, 9, 10, 11, 19, 20, 100, 101, 110, 111, 839, 1000, 1001, 1010, 1260, 10010])
def test_round_trip(value):
    assert cn_to_int(int_to_cn(value)) == value


def test_statute_spelling():
    assert int_to_cn(13) == "十三"
    assert int_to_cn(110) == "一百一十"
    assert int_to_cn(1032) == "一千零三十二"


def test_invalid():
    with pytest.raises(ValueError):
        cn_to_int("十三条")
    with pytest.raises(ValueError):
        int_to_cn(0)
